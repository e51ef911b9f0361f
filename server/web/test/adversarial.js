// Answers of about n characters shaped to make a Markdown parser search again from each
// of many starting points: many openers before one far closer, or none. The unit tests
// count the parser's steps on them; the render bench times them in Chromium.
export function adversarialAnswers(n) {
  const rep = (unit) => unit.repeat(Math.floor(n / unit.length));
  const half = Math.floor(n / 2);
  return {
    '[ then a long url': '['.repeat(half) + 'a](' + 'b'.repeat(n - half - 3),
    '[ then spaced urls': '['.repeat(half) + 'a](' + 'b '.repeat(Math.floor((n - half - 3) / 2)),
    'unclosed [': '['.repeat(n),
    'nested [ ]': '['.repeat(half) + ']'.repeat(n - half),
    '[a then ]': rep('[a').slice(0, half) + ']'.repeat(n - half),
    'unclosed links': rep('[a]('),
    'empty links': rep('[]('),
    'link then (': '[a](' + '('.repeat(n - 4),
    'link then )': '[a](' + ')'.repeat(n - 4),
    '[![': rep('[!['),
    '*': rep('*'),
    'unclosed **': rep('**a '),
    '**a': rep('**a'),
    'bold runs': rep('**a**'),
    '`': rep('`'),
    'backtick runs': rep('`a``b```c````'),
    'unclosed code': rep('a `b '),
    'code spans': rep('`a`'),
    _a: rep('_a'),
    '<': rep('<'),
    'table row': rep('| a '),
    links: rep('[a](/b) '),
    'space run': 'a' + ' '.repeat(n - 2) + 'b',
    'list, space run, U+2028': '- ' + ' '.repeat(n - 5) + 'a\u2028b',
    'numbered, U+2028': '1. ' + ' '.repeat(n - 6) + 'a\u2028b',
    'many lines': rep('line\n'),
    'many paragraphs': rep('a\n\n'),
    'many items': rep('- a\n'),
    'item continuations': '- a\n' + rep('  b\n').slice(4),
    'CR runs': rep('a\r'),
  };
}
