// Result sizes through the TypeScript SDK's client (issue 13): the graphs of
// BENCHMARKS.md's "Result sizes" run through the client Claude Code and most clients are
// built on, which checks every structuredContent against the tool's outputSchema and
// drops a connection that carries a message over its limit. The script fails (exit 1) if
// any result is refused or larger than --max-result, and prints the largest result of each
// call as a Markdown table.
//
//   cd bench && npm ci --omit=optional && go build -o .bin/mcp-harness .. && node results.mjs .bin/mcp-harness

import { harnessSpec, start, tempDir, removeDir, textOf } from './lib/mcp.mjs';

const bin = process.argv[2];
if (!bin) {
  console.error('usage: node results.mjs path/to/mcp-harness');
  process.exit(2);
}
const maxResult = 32 * 1024;
const ws = tempDir('results');
const server = await start(harnessSpec(bin, ws));
const rows = [];
let failures = 0;

// call runs one tool call through the SDK client (which validates it) and records its
// sizes; a refusal by the client or a result over the budget is a failure.
async function call(graph, name, args) {
  let res;
  try {
    res = await server.client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
  } catch (err) {
    failures++;
    console.error(`FAIL ${graph} ${name}: ${err.message}`);
    return {};
  }
  const text = Buffer.byteLength(textOf(res));
  const structured = Buffer.byteLength(JSON.stringify(res.structuredContent ?? null));
  if (res.isError || text > maxResult || structured > maxResult) {
    failures++;
    console.error(`FAIL ${graph} ${name}: isError ${res.isError}, text ${text}, structuredContent ${structured}: ${textOf(res).slice(0, 300)}`);
  }
  const key = `${graph}|${name}`;
  const row = rows.find((r) => r.key === key);
  if (row) {
    row.calls++;
    row.text = Math.max(row.text, text);
    row.structured = Math.max(row.structured, structured);
  } else {
    rows.push({ key, graph, name, calls: 1, text, structured });
  }
  return res.structuredContent ?? {};
}

async function waitDone(graph, graphId) {
  for (;;) {
    const st = await call(graph, 'tasks_status', { graphId, waitMs: 30000, logTail: 0, taskIds: ['t0'] });
    if (st.status !== 'running') return;
  }
}

// pages reads every page of a graph's tasks (tasks_status) or nodes (tasks_graph).
async function pages(graph, name, graphId, list) {
  let cursor;
  let seen = 0;
  for (;;) {
    const args = { graphId };
    if (cursor) args.cursor = cursor;
    const sc = await call(graph, name, args);
    seen += (sc[list] || []).length;
    if (!sc.nextCursor) return seen;
    cursor = sc.nextCursor;
  }
}

function tasks(n, command, deps) {
  return Array.from({ length: n }, (_, i) => {
    const t = { id: `t${i}`, command: typeof command === 'function' ? command(i) : command };
    const d = deps ? deps(i) : [];
    if (d.length) t.dependsOn = d;
    return t;
  });
}

try {
  let g = '200 tasks, 3 KB logs';
  let id = (await call(g, 'tasks_run', { tasks: tasks(200, (i) => `printf '%3071s\\n' log${i % 20 === 7 ? '; exit 1' : ''}`) })).graphId;
  await waitDone(g, id);
  console.error(`${g}: ${await pages(g, 'tasks_status', id, 'tasks')} tasks in the status pages, ${await pages(g, 'tasks_graph', id, 'nodes')} nodes in the graph pages`);
  await call(g, 'tasks_list', { limit: 1000 });

  g = '10,000 tasks, 2 KB logs';
  id = (await call(g, 'tasks_run', { tasks: tasks(10000, `printf '%2047s\\n' log`, (i) => (i >= 100 ? [`t${i - 100}`] : [])) })).graphId;
  await waitDone(g, id);
  await call(g, 'tasks_status', { graphId: id });
  await call(g, 'tasks_graph', { graphId: id });
  await call(g, 'tasks_list', { limit: 1000 });
  g = '10,000 tasks, cancelled';
  id = (await call(g, 'tasks_run', { tasks: tasks(10000, 'sleep 60'), maxParallel: 1 })).graphId;
  await call(g, 'tasks_cancel', { graphId: id, graceMs: 0 });
  await waitDone(g, id);

  g = '900 tasks, 404,550 dependencies';
  id = (await call(g, 'tasks_run', { tasks: tasks(900, 'true', (i) => Array.from({ length: i }, (_, j) => `t${j}`)), maxParallel: 1 })).graphId;
  await call(g, 'tasks_graph', { graphId: id });
  await waitDone(g, id);
  await call(g, 'tasks_status', { graphId: id });
  await call(g, 'tasks_graph', { graphId: id });

  g = 'shell';
  const open = await call(g, 'shell_open', { command: 'bash --norc -i', timeoutMs: 2000 });
  await call(g, 'shell_io', { sessionId: open.sessionId, input: 'seq 1 200000\n', timeoutMs: 5000 });
  await call(g, 'shell_list', {});
  await call(g, 'shell_close', { sessionId: open.sessionId });
} finally {
  await server.close();
  removeDir(ws);
}

console.log(`tools/list (as the SDK client returns it): ${server.toolsListBytes} bytes\n`);
console.log('| Graph | Call | Calls | Largest text (bytes) | Largest structuredContent (bytes) |');
console.log('| --- | --- | ---: | ---: | ---: |');
for (const r of rows) {
  console.log(`| ${r.graph} | ${r.name} | ${r.calls} | ${r.text.toLocaleString('en-US')} | ${r.structured.toLocaleString('en-US')} |`);
}
if (failures) {
  console.error(`${failures} call(s) failed`);
  process.exit(1);
}
