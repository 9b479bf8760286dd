import { createHash } from 'node:crypto';
import type { Json } from '../route-spec.js';
import { TRY_IT_SCRIPT } from './reference-page-script.js';

/** The reference page, and the Content-Security-Policy that lets exactly its own script and style run. */
export interface ReferencePage {
  html: Buffer;
  csp: string;
}

// overflow-wrap:anywhere: a schema, an example or a long word of a meaning breaks, so a phone's width holds each table.
const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:0 1rem;color:#1b1b1b;background:#fff}
pre,code{font:14px/1.4 ui-monospace,monospace}pre{background:#f3f3f3;padding:.5rem;overflow-x:auto;white-space:pre-wrap}
section.op{border-top:1px solid #ccc;margin-top:1.5rem}.method{font-weight:700;margin-right:.5rem}
.deprecated{background:#fff3cd;border-left:4px solid #b58100;padding:.25rem .5rem}
table{border-collapse:collapse;width:100%}
td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
td:last-child,code,pre{overflow-wrap:anywhere}
label{display:block;margin-top:.5rem;font-weight:600}
input,select,textarea{font:inherit;width:100%;box-sizing:border-box}
button{font:inherit;margin-top:.75rem;padding:.4rem 1.2rem}:focus-visible{outline:3px solid #1a5fb4;outline-offset:2px}
a{color:#1a5fb4}`;

const escapeHtml = (text: unknown): string => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const hash = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/**
 * The page for an OpenAPI document: every operation with its parameters, request and response
 * schemas, examples, error codes and headers, then a form that sends requests to `base` (this
 * server, whatever servers the document lists: the page may talk to its own origin only).
 */
export function referencePage(document: Json, base: string): ReferencePage {
  const components = (document.components ?? {}) as Record<string, Record<string, Json>>;
  const resolve = (value: Json): Json => {
    const pointer = value.$ref;
    if (typeof pointer !== 'string') return value;
    const [, , kind = '', name = ''] = pointer.split('/');
    return components[kind]?.[name] ?? value;
  };
  const operations: Array<{ id: string; method: string; path: string; body: string }> = [];
  const sections: string[] = [];
  const nav: string[] = [];
  for (const [path, item] of Object.entries((document.paths ?? {}) as Record<string, Json>)) {
    const servers = item.servers as Array<{ url: string }> | undefined;
    for (const [method, value] of Object.entries(item)) {
      if (method === 'servers') continue;
      const op = value as Json;
      const id = String(op.operationId);
      const shownPath = servers === undefined ? `${base}${path}` : `${servers[0]?.url ?? ''}${path}`;
      const request = (op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined;
      const bodySchema = request?.['application/json']?.schema as Json | undefined;
      const bodyExample =
        bodySchema === undefined ? '' : JSON.stringify(example(resolve(bodySchema), resolve), null, 2);
      if (servers === undefined)
        operations.push({ id, method: method.toUpperCase(), path: path.replace('{petId}', '1'), body: bodyExample });
      nav.push(
        `<li><a href="#${escapeHtml(id)}">${escapeHtml(id)}</a>${op.deprecated === true ? ' (deprecated)' : ''}</li>`,
      );
      sections.push(operationSection(id, method.toUpperCase(), shownPath, op, resolve, bodySchema, bodyExample));
    }
  }
  const headers = Object.entries(components.headers ?? {}).map(
    ([name, h]) =>
      `<tr><th scope="row"><code>${escapeHtml(name)}</code></th><td>${escapeHtml(h.description ?? '')}</td></tr>`,
  );
  const info = (document.info ?? {}) as Json;
  const data = JSON.stringify(Object.fromEntries(operations.map((o) => [o.id, o]))).replace(/</g, '\\u003c');
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(info.title)} ${escapeHtml(info.version)}: reference</title><link rel="icon" href="data:,">
<style>${STYLE}</style></head>
<body><header><h1>${escapeHtml(info.title)} <small>${escapeHtml(info.version)}</small></h1>
<p>${escapeHtml(info.description)}</p>
<p>The interface description this page is built from:
<a href="${escapeHtml(base)}/openapi.json">${escapeHtml(base)}/openapi.json</a>.</p></header>
<nav aria-label="Operations"><h2>Operations</h2><ul>${nav.join('')}</ul><p>
<a href="#try-it">Try it</a> · <a href="#headers">Headers</a></p></nav>
<main>${sections.join('\n')}
<section id="headers" aria-labelledby="headers-title"><h2 id="headers-title">Headers</h2><table>
<tbody>${headers.join('')}</tbody></table></section>
${tryItForm(operations, base)}</main>
<script type="application/json" id="operations">${data}</script><script>${TRY_IT_SCRIPT}</script></body></html>
`;
  const csp =
    `default-src 'none'; script-src ${hash(TRY_IT_SCRIPT)}; style-src ${hash(STYLE)}; img-src data:; connect-src ` +
    `'self'; ` +
    `base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
  return { html: Buffer.from(html), csp };
}

function operationSection(
  id: string,
  method: string,
  path: string,
  op: Json,
  resolve: (value: Json) => Json,
  bodySchema: Json | undefined,
  bodyExample: string,
): string {
  const parts = [
    `<section class="op" id="${escapeHtml(id)}" aria-labelledby="${escapeHtml(id)}-title">`,
    `<h2 id="${escapeHtml(id)}-title"><span ` +
      `class="method">${escapeHtml(method)}</span><code>${escapeHtml(path)}</code></h2>`,
    `<p><strong>${escapeHtml(id)}</strong>: ${escapeHtml(op.summary)}</p>`,
  ];
  if (op.deprecated === true)
    parts.push(`<p class="deprecated" role="note"><strong>Deprecated.</strong> ${escapeHtml(op.description)}</p>`);
  const security = op.security as Array<Record<string, string[]>> | undefined;
  const scopes = security?.[0]?.bearerAuth;
  parts.push(
    scopes === undefined
      ? '<p>No API key needed.</p>'
      : `<p>Bearer API key with the scope <code>${escapeHtml(scopes.join(', '))}</code>.</p>`,
  );
  const parameters = ((op.parameters ?? []) as Json[]).map(resolve);
  if (parameters.length > 0) {
    const rows = parameters.map(
      (p) =>
        `<tr><th scope="row"><code>${escapeHtml(p.name)}</code></th>` +
        `<td>${escapeHtml(p.in)}${p.required === true ? ', required' : ''}</td>` +
        `<td><code>${escapeHtml(JSON.stringify(resolve(p.schema as Json)))}</code></td>` +
        `<td>${escapeHtml(p.description ?? '')}</td></tr>`,
    );
    parts.push(
      `<h3>Parameters</h3><table><thead><tr><th scope="col">name</th><th scope="col">in</th><th ` +
        `scope="col">schema</th><th scope="col">meaning</th></tr></thead><tbody>${rows.join('')}</tbody></table>`,
    );
  }
  if (bodySchema !== undefined) {
    parts.push(
      `<h3>Request body ` +
        `(application/json)</h3><pre>${escapeHtml(JSON.stringify(resolve(bodySchema), null, 2))}</pre>` +
        `<p>Example:</p><pre>${escapeHtml(bodyExample)}</pre>`,
    );
  }
  parts.push('<h3>Responses</h3><dl>');
  for (const [status, value] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
    const headers = Object.keys((value.headers ?? {}) as Json);
    parts.push(`<dt><strong>${escapeHtml(status)}</strong></dt><dd>${escapeHtml(value.description)}`);
    if (headers.length > 0)
      parts.push(`<br>Headers: ${headers.map((h) => `<code>${escapeHtml(h)}</code>`).join(', ')}`);
    for (const [type, media] of Object.entries((value.content ?? {}) as Record<string, Json>)) {
      const schema = resolve((media.schema ?? {}) as Json);
      const shown = media.example ?? JSON.stringify(example(schema, resolve), null, 2);
      parts.push(
        `<details><summary>${escapeHtml(type)}: schema and ` +
          `example</summary><pre>${escapeHtml(JSON.stringify(schema, null, 2))}</pre><pre>${escapeHtml(shown)}</pre>` +
          `</details>`,
      );
    }
    parts.push('</dd>');
  }
  parts.push('</dl></section>');
  return parts.join('\n');
}

/** An example value of a schema: its const, its first enum value, or one made from its type. */
function example(schema: Json, resolve: (value: Json) => Json): unknown {
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[schema.enum.length > 1 ? 1 : 0];
  const properties = schema.properties as Record<string, Json> | undefined;
  switch (schema.type) {
    case 'object':
      return Object.fromEntries(
        Object.entries(properties ?? {}).map(([name, value]) => [
          name,
          SAMPLES[name] ?? example(resolve(value), resolve),
        ]),
      );
    case 'array':
      return [example(resolve((schema.items ?? {}) as Json), resolve)];
    case 'integer':
      return schema.minimum ?? 1;
    case 'string':
      return 'text';
    default:
      return {};
  }
}

// Values that read as a pet rather than as a type.
const SAMPLES: Record<string, unknown> = {
  id: 1,
  name: 'Rex',
  categoryId: 7,
  status: 'available',
  code: 'unauthorized',
  message: 'invalid API key',
};

function tryItForm(operations: Array<{ id: string; method: string }>, base: string): string {
  const options = operations
    .map((o) => `<option value="${escapeHtml(o.id)}">${escapeHtml(o.id)} (${escapeHtml(o.method)})</option>`)
    .join('');
  return `<section id="try-it" aria-labelledby="try-title"><h2 id="try-title">Try it</h2>
<p>Requests go to this server, <code id="base">${escapeHtml(base)}</code>. The key stays in this page's field: it is
not stored and is gone with the page.</p>
<form id="try"><label for="key">API key (bearer)</label>
<input id="key" type="password" autocomplete="off" spellcheck="false">
<label for="op">Operation</label><select id="op">${options}</select>
<label for="path">Path and query after <span id="method" aria-live="polite"></span> ${escapeHtml(base)}</label>
<input id="path" type="text" spellcheck="false">
<div id="body-row"><label for="body">Body (application/json)</label><textarea id="body" rows="5" spellcheck="false">
</textarea></div>
<button type="submit">Send</button></form>
<div aria-live="polite"><h3>Status</h3><p id="result-status">nothing sent yet</p><h3>Headers</h3>
<pre id="result-headers"></pre>
<h3>Body</h3><pre id="result-body"></pre></div></section>`;
}
