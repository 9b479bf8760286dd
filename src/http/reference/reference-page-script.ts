/**
 * The reference page's "try it" script, run in the browser. The key typed in stays in its field: it
 * is read when a request is sent and never written anywhere (no storage, no cookie, no URL).
 */
export const TRY_IT_SCRIPT = `
'use strict';
const $ = (id) => document.getElementById(id);
const operations = JSON.parse($('operations').textContent);
const choose = () => {
  const op = operations[$('op').value];
  $('method').textContent = op.method;
  $('path').value = op.path;
  $('body').value = op.body;
  $('body-row').hidden = op.body === '';
};
$('op').addEventListener('change', choose);
choose();
$('try').addEventListener('submit', async (event) => {
  event.preventDefault();
  const op = operations[$('op').value];
  const headers = {};
  const key = $('key').value.trim();
  if (key !== '') headers.authorization = 'Bearer ' + key;
  if (op.body !== '') headers['content-type'] = 'application/json';
  $('result-status').textContent = 'sending…';
  $('result-headers').textContent = '';
  $('result-body').textContent = '';
  try {
    const res = await fetch($('base').textContent + $('path').value, {
      method: op.method, headers, body: op.body === '' ? undefined : $('body').value,
      cache: 'no-store', credentials: 'omit', redirect: 'manual',
    });
    const text = await res.text();
    $('result-status').textContent = res.status + ' ' + res.statusText;
    $('result-headers').textContent = [...res.headers].map(([name, value]) => name + ': ' + value).join('\\n');
    // As it came: parsed and written again, an int64 beyond 2^53 would lose digits.
    $('result-body').textContent = text;
  } catch (error) {
    $('result-status').textContent = 'no answer: ' + error.message;
  }
});
`;
