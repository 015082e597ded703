"""Loads a plan's page (aviflowc plan --html) in headless Chromium, as a
reader would: takes a screenshot, fails on any console message (errors,
uncaught exceptions), checks that the script drew the chosen layout's
breakdown, and that clicking a column's heading sorts the table by it.

    browser_check.py PAGE.html OUTDIR
Writes OUTDIR/screenshot.png and OUTDIR/sorted.html; prints what it saw.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--hide-scrollbars"]

# After the page's own script: sort by the "step s" column, then by it again
# (descending), and leave the order of the rows' step values in the page.
SORT_PROBE = """<script>
(function () {
  var heads = document.querySelectorAll("#layouts th"), column = -1;
  heads.forEach(function (th, i) { if (th.textContent === "step s") column = i; });
  function order() {
    return Array.prototype.map.call(document.querySelectorAll("#layouts tbody tr"), function (r) {
      return r.cells[column].getAttribute("data-value");
    }).join(",");
  }
  heads[column].click();
  var up = order();
  heads[column].click();
  var down = order();
  document.querySelectorAll("#layouts tbody tr")[0].click();
  var probe = document.createElement("pre");
  probe.id = "probe";
  probe.textContent = "up=" + up + ";down=" + down;
  document.body.appendChild(probe);
})();
</script>
"""


def chromium(args, profile):
    run = subprocess.run(["chromium"] + FLAGS + ["--user-data-dir=" + profile] + args, capture_output=True,
                         text=True, timeout=120)
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    if run.returncode != 0:
        sys.exit(f"chromium exited {run.returncode}:\n{run.stderr[-2000:]}")
    if console:
        sys.exit("console messages:\n" + "\n".join(console))
    return run.stdout


def main():
    page, outdir = os.path.abspath(sys.argv[1]), sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    profile = tempfile.mkdtemp(prefix="avf-chromium-")
    try:
        shot = os.path.join(outdir, "screenshot.png")
        chromium(["--window-size=1400,2400", "--screenshot=" + shot, "file://" + page], profile)
        if not os.path.getsize(shot):
            sys.exit("empty screenshot")
        dom = chromium(["--dump-dom", "file://" + page], profile)
        detail = re.search(r'<div id="detail"[^>]*>(.*?)</div>\s*<script', dom, re.S)
        if not detail or "<h3>chosen:" not in detail.group(1):
            sys.exit("the script did not draw the chosen layout's breakdown")
        print("breakdown drawn: " + re.sub(r"<[^>]+>", " ", detail.group(1)).split("time per step")[0].strip())
        sorted_page = os.path.join(outdir, "sorted.html")
        text = open(page, encoding="utf-8").read()
        open(sorted_page, "w", encoding="utf-8").write(text.replace("</body>", SORT_PROBE + "</body>"))
        dom = chromium(["--dump-dom", "file://" + os.path.abspath(sorted_page)], profile)
        probe = re.search(r'<pre id="probe">up=([^;]*);down=([^<]*)</pre>', dom)
        if not probe:
            sys.exit("the sort probe did not run")
        up = [float(v) for v in probe.group(1).split(",")]
        down = [float(v) for v in probe.group(2).split(",")]
        if up != sorted(up) or down != sorted(up, reverse=True):
            sys.exit(f"not sorted by step time: {up} then {down}")
        print(f"sorted by step time: {len(up)} rows ascending, then descending")
    finally:
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
