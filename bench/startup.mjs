// Cold start as a real MCP client sees it (issue 17): from just before the spawn to the tool
// list in the client's hands, through the official TypeScript SDK's client (spawn,
// initialize, initialized, `client.listTools()` returned, which includes the client
// compiling a validator for every tool's outputSchema) and through the official Go SDK's
// (bench/goclient: spawn, Connect, ListTools returned). The floor is bench/minimal, the
// least a Go MCP server does (the Go SDK, one tool, nothing opened), measured in the same
// rounds: each round starts every server once with each client, in turns, so that a load
// that comes and goes falls on all of them alike. Figures are medians with the middle half
// (25th to 75th percentile) of the rounds; the TypeScript figure is also split into the
// wire (until the tools/list answer is parsed) and the client's schema compiling. Those
// rounds run in one node process, warmed up: a client application that connects a server
// after its own start. A cold client, a new node process for each start (its own code
// and ajv not compiled yet), is measured too, in rounds of its own.
//
//   node bench/startup.mjs --bin bench/.bin/mcp-harness [--old <another build>]... [--rounds N] [--quick]
//
// prints a Markdown table; bench/main.mjs calls runStartup({ bin, quick }).

import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { benchDir, tempDir, removeDir, serverPath, stdioTransport, rotated, log } from './lib/mcp.mjs';

const repoDir = path.dirname(benchDir);

// quantile of sorted xs, interpolated between the nearest ranks.
function quantile(sorted, q) {
  if (!sorted.length) return NaN;
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo);
}

// stats is the median and the middle half of xs.
export function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, median: quantile(s, 0.5), p25: quantile(s, 0.25), p75: quantile(s, 0.75) };
}

// buildTools builds the floor server and the Go client into bench/.bin.
function buildTools() {
  const out = path.join(benchDir, '.bin');
  fs.mkdirSync(out, { recursive: true });
  const built = {};
  for (const name of ['minimal', 'goclient']) {
    built[name] = path.join(out, name);
    execFileSync('go', ['build', '-o', built[name], `./bench/${name}`], { cwd: repoDir, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return built;
}

// tsStart is one cold start through the TypeScript SDK's client: the whole time, and its
// parts: initialize answered (connect), tools/list answered and parsed, the client's
// compiling of the output schemas (cacheToolMetadata, run inside listTools()).
async function tsStart(server) {
  const { transport, stderrTail } = stdioTransport({
    command: server.command[0],
    args: server.command.slice(1),
    env: { PATH: serverPath() },
    cwd: server.dir,
  });
  // Made before the clock starts, as a client application makes it once: the constructor
  // sets up the JSON Schema validator (ajv) that listTools() then compiles with.
  const client = new Client({ name: 'mcp-harness-bench', version: '1' });
  let compileMs = 0;
  const cache = client.cacheToolMetadata.bind(client);
  client.cacheToolMetadata = (tools) => {
    const t = performance.now();
    cache(tools);
    compileMs += performance.now() - t;
  };
  const t0 = performance.now();
  try {
    await client.connect(transport);
    const tInit = performance.now();
    const { tools } = await client.listTools();
    const t1 = performance.now();
    if (!tools.length) throw new Error(`${server.name} listed no tools`);
    return {
      totalMs: t1 - t0,
      initMs: tInit - t0,
      wireMs: t1 - t0 - compileMs,
      compileMs,
      tools: tools.length,
      withOutputSchema: tools.filter((t) => t.outputSchema).length,
      outputSchemaBytes: tools.reduce((n, t) => n + (t.outputSchema ? JSON.stringify(t.outputSchema).length : 0), 0),
      toolsListBytes: Buffer.byteLength(JSON.stringify({ tools })),
    };
  } catch (err) {
    throw new Error(`${server.name}: ${err.message}; its stderr: ${stderrTail()}`);
  } finally {
    await client.close();
  }
}

// goStarts is one round of cold starts through the Go SDK's client, one per server.
function goStarts(goclient, servers) {
  const spec = { runs: 1, servers: servers.map(({ name, command, dir }) => ({ name, command, dir })) };
  const out = execFileSync(goclient, [JSON.stringify(spec)], { env: { PATH: serverPath() }, stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(out.toString());
}

// coldStart is one start through the TypeScript SDK's client in a node process of its own
// (this script with --one), so that neither the client's code nor ajv has run before.
function coldStart(server) {
  const spec = { name: server.name, command: server.command, dir: server.dir };
  const out = execFileSync(process.execPath, [new URL(import.meta.url).pathname, '--one', JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(out.toString()).totalMs;
}

// runStartup measures the cold starts of bin (and of each build in old, by name: an
// earlier mcp-harness to compare with) against the floor. It returns the per-server
// figures, each { ts: {total, init, wire, compile}, go } of stats, and rows for the table.
export async function runStartup({ bin, quick, old = [], rounds }) {
  rounds ??= quick ? 2 : 15;
  const warm = quick ? 1 : 2;
  const built = buildTools();
  const dirs = [];
  const harness = (name, b) => {
    const ws = tempDir(`startup-${name}`);
    dirs.push(ws);
    // A workspace that was used before (the warm-up rounds create its store): a client
    // starts the server on the project it was started on yesterday.
    return { name, command: [path.resolve(b), 'stdio', '--workspace', ws, '--log-level', 'warn'], dir: ws };
  };
  const servers = [harness('mcp-harness', bin), ...old.map((o) => harness(o.name, o.bin))];
  const floorDir = tempDir('startup-floor');
  dirs.push(floorDir);
  servers.push({ name: 'floor', command: [built.minimal], dir: floorDir, floor: true });

  const raw = Object.fromEntries(servers.map((s) => [s.name, { total: [], init: [], wire: [], compile: [], go: [], cold: [] }]));
  const shape = {};
  try {
    for (let r = 0; r < warm + rounds; r++) {
      const order = rotated(servers, r);
      for (const s of order) {
        const m = await tsStart(s);
        shape[s.name] = { tools: m.tools, withOutputSchema: m.withOutputSchema, outputSchemaBytes: m.outputSchemaBytes, toolsListBytes: m.toolsListBytes };
        if (r < warm) continue;
        for (const k of ['total', 'init', 'wire', 'compile']) raw[s.name][k].push(m[`${k}Ms`]);
      }
      const g = goStarts(built.goclient, order);
      if (r >= warm) for (const s of servers) raw[s.name].go.push(g[s.name][0]);
      log(`startup round ${r + 1}/${warm + rounds}${r < warm ? ' (warm-up)' : ''}: ${order.map((s) => `${s.name} ${raw[s.name].total.at(-1)?.toFixed(1) ?? '-'} ms`).join(', ')}`);
    }
    for (let r = 0; r < rounds; r++) {
      const order = rotated(servers, r);
      for (const s of order) raw[s.name].cold.push(coldStart(s));
      log(`startup cold-client round ${r + 1}/${rounds}: ${order.map((s) => `${s.name} ${raw[s.name].cold.at(-1).toFixed(1)} ms`).join(', ')}`);
    }
  } finally {
    for (const d of dirs) removeDir(d);
  }
  const figures = {};
  for (const s of servers) {
    const x = raw[s.name];
    figures[s.name] = {
      ...shape[s.name],
      ts: { total: stats(x.total), init: stats(x.init), wire: stats(x.wire), compile: stats(x.compile), cold: stats(x.cold) },
      go: stats(x.go),
    };
  }
  return { rounds, figures, rows: startupRows(figures) };
}

const fmt = (st) => `${st.median.toFixed(1)} ms (${st.p25.toFixed(1)}–${st.p75.toFixed(1)})`;

// startupRows are the table rows: each build's figure beside the floor's, and their ratio.
export function startupRows(figures) {
  const floor = figures.floor;
  const rows = [];
  for (const [name, f] of Object.entries(figures)) {
    if (name === 'floor') continue;
    const row = (metric, mine, base, target, ok) =>
      rows.push({
        group: 'Start-up', metric: `${metric}${name === 'mcp-harness' ? '' : ` [${name}]`}`, harness: fmt(mine), who: 'Go minimal MCP server', base: fmt(base),
        // The floor has no output schema to compile: no ratio to speak of.
        ratio: base.median >= 0.1 ? (mine.median / base.median).toFixed(2) : '—', target, ok,
      });
    // The target is this build's: an old build's figure is there to compare with.
    const current = name === 'mcp-harness';
    row('cold start, TypeScript SDK client: spawn to listTools() returned', f.ts.total, floor.ts.total, current ? '≤ 25 ms' : '—', current ? f.ts.total.median <= 25 : null);
    row('  of which on the wire (initialize, tools/list answered)', f.ts.wire, floor.ts.wire, '—', null);
    row('  of which the client compiling output schemas', f.ts.compile, floor.ts.compile, '—', null);
    row('  same, the client in a new node process for each start', f.ts.cold, floor.ts.cold, '—', null);
    row('cold start, Go SDK client: spawn to ListTools returned', f.go, floor.go, '—', null);
  }
  return rows;
}

// Run as a script: print the table.
if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  const argv = process.argv.slice(2);
  const flag = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
  if (flag('--one')) {
    // One start for coldStart: the figures as JSON on stdout.
    console.log(JSON.stringify(await tsStart(JSON.parse(flag('--one')))));
    process.exit(0);
  }
  const bin = flag('--bin');
  if (!bin) {
    console.error('usage: node bench/startup.mjs --bin <mcp-harness> [--old <earlier build>]... [--rounds N] [--quick]');
    process.exit(2);
  }
  // Each --old is another build to compare, named by its file name.
  const old = argv.flatMap((a, i) => (a === '--old' && argv[i + 1] ? [{ name: path.basename(argv[i + 1]), bin: argv[i + 1] }] : []));
  const res = await runStartup({ bin, quick: argv.includes('--quick'), old, rounds: flag('--rounds') && Number(flag('--rounds')) });
  console.log(`${res.rounds} rounds, median (middle half)\n`);
  console.log('| metric | mcp-harness | floor | ratio | target | met |');
  console.log('|---|---|---|---|---|---|');
  for (const r of res.rows) console.log(`| ${r.metric} | ${r.harness} | ${r.base} | ${r.ratio} | ${r.target} | ${r.ok == null ? '—' : r.ok ? 'yes' : '**no**'} |`);
  console.log();
  for (const [name, f] of Object.entries(res.figures)) {
    console.log(`${name}: ${f.tools} tools, ${f.withOutputSchema} with an outputSchema (${f.outputSchemaBytes} B), tools/list ${f.toolsListBytes} B; TS initialize answered ${fmt(f.ts.init)}`);
  }
}
