// Runs every comparison and prints one Markdown table: each metric for mcp-harness, the
// peer or baseline measured in the same run, their ratio, and whether the target of issue 8
// is met. Progress goes to stderr; the table (and the machine and versions) to stdout.
//
//   node bench/main.mjs --bin bench/.bin/mcp-harness [--quick]
//
// bench/run installs what this needs and calls it. Exit status: 0 when every comparison ran
// (a missed target is reported, not an error), 1 when one broke.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { desktopCommanderEntry, benchDir, log } from './lib/mcp.mjs';
import { runTerminal } from './terminal.mjs';
import { runDag } from './dag.mjs';
import { runStore } from './store.mjs';
import { runGoBench } from './gobench.mjs';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const bin = argv[argv.indexOf('--bin') + 1];
if (!argv.includes('--bin') || !bin || !fs.existsSync(bin)) {
  console.error('usage: node bench/main.mjs --bin <mcp-harness binary> [--quick]');
  process.exit(2);
}

const broken = [];
const notes = [];
const results = {};

async function step(name, fn) {
  const t0 = performance.now();
  try {
    results[name] = await fn();
  } catch (err) {
    broken.push(`${name}: ${err?.stack || err}`);
    log(`BROKEN ${name}: ${err?.message || err}`);
  }
  log(`${name} took ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

const dc = desktopCommanderEntry();
if (!dc) {
  const msg = 'Desktop Commander is not installed (npm ci in bench/ failed for it): the terminal comparison runs mcp-harness alone';
  if (quick) notes.push(`SKIPPED: ${msg}.`);
  else broken.push(`terminal: ${msg}`);
  log(msg);
}

const t0 = performance.now();
await step('terminal', () => runTerminal({ bin, dc, quick }));
await step('dag-server', () => runDag({ bin, quick }));
await step('store', () => runStore({ bin, quick }));
await step('go-bench', () => runGoBench({ quick }));
const totalSec = (performance.now() - t0) / 1000;

// ---- the table ----

const rows = [];
const fmtMs = (ms) => (ms == null || !Number.isFinite(ms) ? '—' : ms >= 100 ? `${Math.round(ms).toLocaleString('en-US')} ms` : `${ms.toFixed(ms >= 10 ? 1 : 2)} ms`);
const fmtUs = (us) => (us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(0)} µs`);
const fmtMiB = (kib) => `${(kib / 1024).toFixed(1)} MiB`;
const fmtBytes = (b) => `${b.toLocaleString('en-US')} B`;
const fmtRate = (r) => `${r.toFixed(0)} graphs/s`;
const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : NaN);
const fmtRatio = (r, times) => {
  if (!Number.isFinite(r)) return '—';
  const base = r >= 10 ? r.toFixed(1) : r >= 1 ? r.toFixed(2) : r.toPrecision(2);
  return times && r < 1 ? `${base} (${(1 / r).toFixed(1)}x ${times})` : base;
};
const met = (ok) => (ok == null ? '—' : ok ? 'yes' : '**no**');

function row(group, metric, harness, who, base, r, target = '—', ok = null) {
  rows.push({ group, metric, harness, who, base, r, target, ok: met(ok) });
}

const term = results.terminal;
const dcName = dc ? `Desktop Commander ${dc.version}` : 'Desktop Commander';
if (term) {
  const h = term.servers['mcp-harness'];
  const d = term.servers['Desktop Commander'];
  const c = term.config;
  const cmp = (metric, hv, dv, fmt, times, target, limit) => {
    const r = d ? ratio(hv, dv) : NaN;
    row('Terminal', metric, fmt(hv), dcName, d ? fmt(dv) : 'skipped', fmtRatio(r, times), target, d && limit ? r <= limit : null);
  };
  cmp(`cold start to the tools/list answer (median of ${c.spawns})`, h.startMedianMs, d?.startMedianMs, fmtMs, 'faster', '≤ 0.20 (≥ 5x faster)', 0.2);
  cmp('server RSS after start (median)', h.rssMedianKiB, d?.rssMedianKiB, fmtMiB, 'lower', '≤ 0.33 (≥ 3x lower)', 1 / 3);
  cmp('tools/list answer size', h.toolsListBytes, d?.toolsListBytes, fmtBytes, 'smaller');
  cmp(`interactive round trip, \`echo\` in bash (median of ${c.trips})`, h.roundTripMs, d?.roundTripMs, fmtMs, 'faster', '≤ 0.20 (≥ 5x faster)', 0.2);
  const mb = `${c.bulkBytes / 1e6} MB`;
  cmp(`bulk output, ${mb} through a session: time`, h.bulkMs, d?.bulkMs, fmtMs, 'faster');
  cmp(`bulk output, ${mb} through a session: server peak RSS`, h.bulkPeakKiB, d?.bulkPeakKiB, fmtMiB, 'lower');
  cmp(`bulk output, ${mb} through a session: text the answers carried`, h.bulkTextBytes, d?.bulkTextBytes, fmtBytes, 'less');
  for (const [who, x] of [['mcp-harness', h], [dcName, d]]) {
    if (x?.bulkLostTail) notes.push(`${who} lost the end of the bulk output (its last line was not in what the server kept).`);
  }
  if (d) {
    notes.push(`Desktop Commander round trip, each way measured: ${Object.entries(d.roundTrip).map(([k, v]) => `${k} ${fmtMs(v)}`).join('; ')} (the table uses the fastest).`);
  }
}

const go = results['go-bench'];
if (go) {
  for (const [shape, s] of Object.entries(go.dag)) {
    const wide = !shape.startsWith('chain');
    const g = `DAG, engine in-process (Go BenchmarkDAG, median of ${go.dagReps})`;
    const runners = [['make', 'make -j'], ['ninja', 'ninja -j'], ['spawn-floor', 'spawn floor']];
    for (const [k, who] of runners) {
      const r = ratio(s.engine, s[k]);
      const target = k === 'make' && wide ? '≤ 1.25' : '—';
      row(g, `${shape} × \`true\`: wall time`, fmtMs(s.engine), who, s[k] == null ? 'skipped (not installed)' : fmtMs(s[k]), fmtRatio(r), target,
        k === 'make' && wide && Number.isFinite(r) ? r <= 1.25 : null);
    }
    if (shape.startsWith('chain')) {
      const links = Number(shape.split('-')[1]) - 1;
      const over = (s.engine - s['spawn-floor']) / links;
      row(g, `${shape}: overhead a link above the spawn floor`, over < 0 ? `${fmtMs(over)} (at the floor)` : fmtMs(over), 'spawn floor', '0 ms', '—', '< 2 ms', over < 2);
    }
  }
}

const dag = results['dag-server'];
if (dag) {
  const g = `DAG through the server (stdio, -j${dag.parallel}, median of ${dag.reps})`;
  for (const c of dag.cases) {
    const h = c.runners['mcp-harness'];
    for (const who of ['make', 'ninja']) {
      const t = c.runners[who];
      const r = t ? ratio(h.wallMs, t.wallMs) : NaN;
      const target = who === 'make' && c.wide ? '≤ 1.25' : '—';
      row(g, `${c.name}: wall time`, fmtMs(h.wallMs), `${who} -j`, t ? fmtMs(t.wallMs) : 'skipped (not installed)', fmtRatio(r), target,
        who === 'make' && c.wide && t ? r <= 1.25 : null);
    }
    const mk = c.runners.make;
    row(g, `${c.name}: CPU time, runner and its tasks`, fmtMs(h.cpuMs), 'make -j', mk ? fmtMs(mk.cpuMs) : 'skipped', fmtRatio(mk ? ratio(h.cpuMs, mk.cpuMs) : NaN));
    row(g, `${c.name}: the server's own CPU time`, `${fmtMs(h.serverCpuMs)} (${(h.serverCpuMs / c.tasks).toFixed(2)} ms a task)`, '—', '—', '—');
  }
}

if (go) {
  const r = ratio(go.tail.bigUs, go.tail.smallUs);
  row(`Log reads (Go BenchmarkTasksStatusTail, median of ${go.tailReps})`, 'tasks_status tail of a 1 GiB log vs a 1 KiB one', fmtUs(go.tail.bigUs), 'same call, 1 KiB log', fmtUs(go.tail.smallUs), fmtRatio(r), '≤ 1.5', r <= 1.5);
}

const st = results.store;
if (st) {
  const r = ratio(st.twoServers.graphsPerSec, st.oneServer.graphsPerSec);
  row('Store', `graphs submitted per second (${st.graphsPerServer} graphs of ${st.tasksPerGraph} tasks a server): two servers on one workspace, together`,
    fmtRate(st.twoServers.graphsPerSec), 'one server alone', fmtRate(st.oneServer.graphsPerSec), `${fmtRatio(r)} (two ÷ one)`);
}

// ---- machine, versions, output ----

function version(cmd, args, re = /(\S*\d+\.\d+\S*)/) {
  try {
    const out = execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
    return (out.match(re) || [])[1] || out.split('\n')[0].trim();
  } catch {
    return 'not installed';
  }
}
const cpuModel = ((fs.readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.*)$/m) || [])[1] || 'unknown').trim();
const lines = [];
lines.push(`Machine: ${os.availableParallelism()} CPUs (${cpuModel}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, ${os.type()} ${os.release().split('-')[0]} ${os.arch()}`);
lines.push(`Versions: ${version('go', ['version'], /go version (\S+)/)}, node ${process.version}, ${dcName}, ` +
  `@modelcontextprotocol/sdk ${sdkVersion()}, GNU make ${version('make', ['--version'], /Make (\S+)/)}, ninja ${version('ninja', ['--version'])}, bash ${version('bash', ['--version'], /version (\S+)/)}`);
lines.push(`Mode: ${quick ? 'quick (small sizes, one run each: the figures only show that the code works)' : 'full'}; took ${totalSec.toFixed(0)} s`);
lines.push('');
lines.push('| Comparison | Metric | mcp-harness | Baseline | Baseline value | Ratio (mcp-harness ÷ baseline) | Target | Met |');
lines.push('| --- | --- | ---: | --- | ---: | ---: | --- | --- |');
for (const r of rows) lines.push(`| ${r.group} | ${r.metric} | ${r.harness} | ${r.who} | ${r.base} | ${r.r} | ${r.target} | ${r.ok} |`);
lines.push('');
for (const n of notes) lines.push(n);
const missed = rows.filter((r) => r.ok === '**no**');
lines.push(`Targets: ${rows.filter((r) => r.ok === 'yes').length} met, ${missed.length} missed${missed.length ? ': ' + missed.map((r) => `${r.metric} vs ${r.who} (${r.group})`).join('; ') : ''}.`);
for (const b of broken) lines.push(`BROKEN: ${b.split('\n')[0]}`);
process.stdout.write(lines.join('\n') + '\n');

fs.mkdirSync(path.join(benchDir, '.results'), { recursive: true });
fs.writeFileSync(path.join(benchDir, '.results', quick ? 'quick.json' : 'full.json'), JSON.stringify({ results, broken, notes }, null, 2));
fs.writeFileSync(path.join(benchDir, '.results', quick ? 'quick.md' : 'full.md'), lines.join('\n') + '\n');
if (broken.length) {
  for (const b of broken) process.stderr.write(`\nBROKEN ${b}\n`);
  process.exit(1);
}

function sdkVersion() {
  try {
    return JSON.parse(fs.readFileSync(path.join(benchDir, 'node_modules', '@modelcontextprotocol', 'sdk', 'package.json'), 'utf8')).version;
  } catch {
    return '?';
  }
}
