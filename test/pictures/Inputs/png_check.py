"""Checks that a PNG is a real picture: decodes it (zlib and the PNG row
filters, 8-bit RGB or RGBA) and fails when it is empty, or of one colour, or
nearly all background.

    png_check.py FILE.png [--min-colours N] [--min-width W] [--min-height H]
"""
import argparse
import struct
import sys
import zlib


def chunks(data):
    pos = 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        yield kind, data[pos + 8:pos + 8 + length]
        pos += 12 + length


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def unfilter(raw, width, height, bpp):
    stride = width * bpp
    rows, prev, pos = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            line = bytearray((x + y) & 0xFF for x, y in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                upper_left = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + paeth(left, prev[i], upper_left)) & 0xFF
        elif kind != 0:
            raise ValueError(f"unknown PNG filter {kind}")
        rows.append(bytes(line))
        prev = line
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("png")
    parser.add_argument("--min-colours", type=int, default=8)
    parser.add_argument("--min-width", type=int, default=100)
    parser.add_argument("--min-height", type=int, default=100)
    args = parser.parse_args()
    data = open(args.png, "rb").read()
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        sys.exit(f"{args.png}: not a PNG")
    header = idat = None
    idat = b""
    for kind, body in chunks(data):
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour_type = header[:4]
    if depth != 8 or colour_type not in (2, 6):
        sys.exit(f"{args.png}: bit depth {depth}, colour type {colour_type}: only 8-bit RGB(A) is read")
    bpp = 3 if colour_type == 2 else 4
    rows = unfilter(zlib.decompress(idat), width, height, bpp)
    colours, background = {}, None
    for row in rows:
        for i in range(0, len(row), bpp):
            pixel = row[i:i + bpp]
            colours[pixel] = colours.get(pixel, 0) + 1
    background, most = max(colours.items(), key=lambda kv: kv[1])
    drawn = 1 - most / (width * height)
    print(f"{width}x{height}, {len(colours)} colours, {100 * drawn:.1f}% drawn")
    problems = []
    if width < args.min_width or height < args.min_height:
        problems.append(f"smaller than {args.min_width}x{args.min_height}")
    if len(colours) < args.min_colours:
        problems.append(f"fewer than {args.min_colours} colours")
    if drawn < 0.02:
        problems.append("nearly blank")
    if problems:
        sys.exit(f"{args.png}: " + ", ".join(problems))


if __name__ == "__main__":
    main()
