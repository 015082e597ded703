// Checks the TextMate grammar against aviflowc's own lexer: tokenizes each
// .avf file as VS Code does (vscode-textmate with the Oniguruma regex engine
// of vscode-oniguruma) and compares the scope of every token that
// `aviflowc --dump=tokens` reports with the scope its kind and place
// call for; every other non-blank character must be in a comment.
//   node tokenize.js [--grammar FILE] AVIFLOWC FILE.avf...
// Prints one line per file; exits 1 listing the characters scoped wrongly.
'use strict';

const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const DECLARATION_KINDS = new Set([
  'KwGpu', 'KwFabric', 'KwNode', 'KwCluster', 'KwStorage', 'KwDataset', 'KwModel', 'KwJob',
]);
const FIXED_SCOPES = {
  KwImport: 'keyword.control.import.avf',
  KwTrue: 'constant.language.boolean.avf',
  KwFalse: 'constant.language.boolean.avf',
  KwAuto: 'constant.language.auto.avf',
  String: 'string.quoted.double.avf',
  LBrace: 'punctuation.section.block.begin.avf',
  RBrace: 'punctuation.section.block.end.avf',
  LBracket: 'punctuation.section.brackets.begin.avf',
  RBracket: 'punctuation.section.brackets.end.avf',
  LParen: 'punctuation.section.parens.begin.avf',
  RParen: 'punctuation.section.parens.end.avf',
  Assign: 'keyword.operator.assignment.avf',
  Colon: 'punctuation.separator.inheritance.avf',
  Semi: 'punctuation.separator.field.avf',
  Comma: 'punctuation.separator.comma.avf',
  Dot: 'punctuation.accessor.avf',
  Plus: 'keyword.operator.arithmetic.avf',
  Minus: 'keyword.operator.arithmetic.avf',
  Star: 'keyword.operator.arithmetic.avf',
  Slash: 'keyword.operator.arithmetic.avf',
};
const COMMENT_SCOPES = ['comment.line.double-slash.avf', 'comment.block.avf'];
// The lexer's NUMBER: digits, fraction and exponent, then the unit suffix.
const NUMBER = /^([0-9](?:_?[0-9])*(?:\.[0-9](?:_?[0-9])*)?(?:[eE][+-]?[0-9](?:_?[0-9])*)?)(.*)$/;
const MAX_REPORTED = 20;

async function loadGrammar(grammarPath) {
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (text) => new oniguruma.OnigString(text),
    }),
    loadGrammar: async (scopeName) =>
      scopeName === 'source.avf' ? vsctm.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), grammarPath) : null,
  });
  return registry.loadGrammar('source.avf');
}

// scopes[line][utf16 index] -> the scope list of that character.
function scopesOfSource(grammar, lines) {
  let state = vsctm.INITIAL;
  return lines.map((line) => {
    const result = grammar.tokenizeLine(line, state);
    state = result.ruleStack;
    const perChar = new Array(line.length);
    for (const token of result.tokens) {
      for (let i = token.startIndex; i < Math.min(token.endIndex, line.length); i++) {
        perChar[i] = token.scopes;
      }
    }
    return perChar;
  });
}

// `line:col Kind 'text'` (col counts bytes from 1) -> {line, byteCol, kind, text}.
function lexerTokens(aviflowc, file) {
  const dump = execFileSync(aviflowc, ['--dump=tokens', file], { encoding: 'utf8' });
  return dump.split('\n').filter((l) => l !== '').map((l) => {
    const match = /^(\d+):(\d+) (\w+)(?: '(.*)')?$/.exec(l);
    if (!match) {
      throw new Error(`${file}: cannot read the token dump line ${JSON.stringify(l)}`);
    }
    return { line: Number(match[1]) - 1, byteCol: Number(match[2]) - 1, kind: match[3], text: match[4] || '' };
  });
}

function utf16Index(line, byteCol) {
  let bytes = 0;
  for (let i = 0; i < line.length; i++) {
    if (bytes === byteCol) {
      return i;
    }
    const code = line.codePointAt(i);
    bytes += Buffer.byteLength(String.fromCodePoint(code), 'utf8');
    if (code > 0xffff) {
      i++;
    }
  }
  return line.length;
}

// The scope a name-like token (an identifier or a kind keyword) must have:
// what it is follows from its neighbours in the token stream.
function nameScope(token, prev, next, depth) {
  const prevKind = prev ? prev.kind : 'Newline';
  const nextKind = next ? next.kind : 'EndOfFile';
  if (depth === 0 && DECLARATION_KINDS.has(token.kind)) return 'storage.type.avf';
  if (depth === 0 && DECLARATION_KINDS.has(prevKind)) return 'entity.name.type.avf';
  if (depth === 0 && prevKind === 'Colon') return 'entity.other.inherited-class.avf';
  if (nextKind === 'Assign') return 'variable.other.property.avf';
  if (nextKind === 'LBrace') {
    const fieldStart = ['LBrace', 'Semi', 'Newline'].includes(prevKind);
    return fieldStart ? 'variable.other.property.avf' : 'entity.name.type.avf';
  }
  if (nextKind === 'LParen') return 'support.function.avf';
  if (prevKind === 'Dot') return 'variable.other.property.avf';
  return 'variable.other.avf';
}

// [utf16 offset within the token, length, scope] parts of one token.
function expectedParts(token, prev, next, depth) {
  if (token.kind === 'Number') {
    const [, digits, unit] = NUMBER.exec(token.text);
    const parts = [[0, digits.length, 'constant.numeric.avf']];
    if (unit !== '') parts.push([digits.length, unit.length, 'keyword.other.unit.avf']);
    return parts;
  }
  if (token.kind === 'Identifier' || DECLARATION_KINDS.has(token.kind)) {
    return [[0, token.text.length, nameScope(token, prev, next, depth)]];
  }
  if (token.kind in FIXED_SCOPES) return [[0, token.text.length, FIXED_SCOPES[token.kind]]];
  throw new Error(`line ${token.line + 1}: the lexer reports ${token.kind} '${token.text}'; the file must lex cleanly`);
}

function checkFile(grammar, aviflowc, file) {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const scopes = scopesOfSource(grammar, lines);
  const covered = lines.map((line) => new Array(line.length).fill(false));
  const problems = [];
  const tokens = lexerTokens(aviflowc, file);
  let depth = 0;
  let checked = 0;
  tokens.forEach((token, i) => {
    if (token.kind === 'Newline' || token.kind === 'EndOfFile') return;
    checked++;
    if (['RBrace', 'RBracket', 'RParen'].includes(token.kind)) depth--;
    const line = lines[token.line];
    const start = utf16Index(line, token.byteCol);
    const prev = tokens[i - 1];
    if (line.substr(start, token.text.length) !== token.text) {
      throw new Error(`${file}:${token.line + 1}: the dump's ${token.kind} '${token.text}' is not in the source there`);
    }
    for (const [offset, length, scope] of expectedParts(token, prev, tokens[i + 1], depth)) {
      let reported = false;
      for (let c = start + offset; c < start + offset + length; c++) {
        covered[token.line][c] = true;
        const got = scopes[token.line][c] || [];
        if (!reported && (!got.includes(scope) || got.some((s) => s.startsWith('comment.')))) {
          problems.push(`${file}:${token.line + 1}:${c + 1}: ${token.kind} '${token.text}': expected ${scope}, ` +
                        `got ${got.join(' ')}`);
          reported = true;
        }
      }
    }
    if (['LBrace', 'LBracket', 'LParen'].includes(token.kind)) depth++;
  });
  let commentChars = 0;
  lines.forEach((line, l) => {
    for (let c = 0; c < line.length; c++) {
      if (covered[l][c] || /\s/.test(line[c])) continue;
      const got = scopes[l][c] || [];
      if (got.some((s) => COMMENT_SCOPES.includes(s))) {
        commentChars++;
      } else {
        problems.push(`${file}:${l + 1}:${c + 1}: '${line[c]}' is no token, so it must be in a comment; got ${got.join(' ')}`);
      }
    }
  });
  return { tokens: checked, commentChars, problems };
}

async function main(argv) {
  let grammarPath = path.join(__dirname, '..', 'syntaxes', 'avf.tmLanguage.json');
  if (argv[0] === '--grammar') {
    grammarPath = argv[1];
    argv = argv.slice(2);
  }
  const [aviflowc, ...files] = argv;
  if (!aviflowc || files.length === 0) {
    console.error('usage: node tokenize.js [--grammar FILE] AVIFLOWC FILE.avf...');
    return 2;
  }
  const grammar = await loadGrammar(grammarPath);
  let failed = false;
  for (const file of files) {
    const { tokens, commentChars, problems } = checkFile(grammar, aviflowc, file);
    console.log(`${path.basename(file)}: ${tokens} tokens, ${commentChars} comment characters, ` +
                `${problems.length} scoped wrongly`);
    problems.slice(0, MAX_REPORTED).forEach((p) => console.log(`  ${p}`));
    failed = failed || problems.length > 0;
  }
  return failed ? 1 : 0;
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (error) => {
  console.error(`tokenize.js: ${error.message}`);
  process.exitCode = 2;
});
