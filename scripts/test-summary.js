'use strict';
/**
 * A node:test reporter for `npm test`: one line per test file (tests passed, failed, skipped), every
 * failure in full, then the runner's own closing summary (`# tests`, `# pass`, `# fail`, …) as TAP
 * writes it. What a test file prints on stderr (warnings a test provokes on purpose, a server's log
 * lines) is shown only under a file that failed, where it may explain the failure.
 */
const { inspect } = require('node:util');
const { relative } = require('node:path');

module.exports = async function* summary(source) {
  const files = new Map();
  const failures = [];
  const diagnostics = [];
  const fileOf = (data) => {
    const name = data.file === undefined ? '(no file)' : relative(process.cwd(), data.file);
    if (!files.has(name)) files.set(name, { pass: 0, fail: 0, skip: 0, output: [] });
    return files.get(name);
  };
  for await (const { type, data } of source) {
    if (type === 'test:pass' || type === 'test:fail') {
      if (data.details?.type === 'suite') continue;
      const file = fileOf(data);
      if (data.skip !== undefined || data.todo !== undefined) file.skip++;
      else if (type === 'test:pass') file.pass++;
      else {
        file.fail++;
        failures.push({ file: data.file, name: data.name, line: data.line, error: data.details?.error });
      }
    } else if (type === 'test:stderr' || type === 'test:stdout') {
      fileOf(data).output.push(data.message);
    } else if (type === 'test:diagnostic' && data.nesting === 0 && data.file === undefined) {
      diagnostics.push(data.message);
    }
  }
  for (const [name, file] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    const skipped = file.skip === 0 ? '' : `, ${file.skip} skipped`;
    yield `${file.fail === 0 ? 'ok    ' : 'FAILED'} ${name}: ${file.pass} passed${file.fail === 0 ? '' : `, ${file.fail} failed`}${skipped}\n`;
  }
  for (const failure of failures) {
    const where = failure.file === undefined ? '' : `${relative(process.cwd(), failure.file)}:${failure.line ?? '?'}`;
    yield `\n✖ ${failure.name} (${where})\n${inspect(failure.error?.cause ?? failure.error, { depth: 4 })}\n`;
  }
  for (const [name, file] of files) {
    if (file.fail > 0 && file.output.length > 0) yield `\n--- what ${name} printed ---\n${file.output.join('')}`;
  }
  yield `\n${diagnostics.map((line) => `# ${line}`).join('\n')}\n`;
};
