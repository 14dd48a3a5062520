// Shared pieces of the benchmarks: launching a stdio MCP server with the official TypeScript
// SDK's client (the same client code for every server), running a helper program for its
// output, reading a process's memory and CPU from /proc, and small statistics helpers.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export const benchDir = path.dirname(path.dirname(new URL(import.meta.url).pathname));

// Where Desktop Commander's stdio entry point lives once `npm ci` has run (null if absent).
export function desktopCommanderEntry() {
  const pkg = path.join(benchDir, 'node_modules', '@wonderwhy-er', 'desktop-commander', 'package.json');
  if (!fs.existsSync(pkg)) return null;
  const meta = JSON.parse(fs.readFileSync(pkg, 'utf8'));
  const bin = typeof meta.bin === 'string' ? meta.bin : meta.bin?.['desktop-commander'];
  const entry = path.join(path.dirname(pkg), bin || meta.main || 'dist/index.js');
  return fs.existsSync(entry) ? { entry, version: meta.version } : null;
}

export function tempDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `mcph-bench-${prefix}-`));
}

export function removeDir(dir) {
  try {
    fs.rmSync(dir, { recursive: true, force: true });
  } catch {
    // a process still writing there: leave it to the OS's temp cleaning
  }
}

// A home directory for Desktop Commander, so that it neither reads nor writes the real
// user's ~/.claude-server-commander. It holds an empty stand-in for the Chrome build that
// Desktop Commander downloads once (for PDF export) on its first start: a real user has it
// after the first day, and without it every benchmark spawn would start a background
// download (or a failing one, offline).
export function desktopCommanderHome() {
  const home = tempDir('dc-home');
  const chrome = path.join(home, '.claude-server-commander', 'puppeteer-cache', 'chrome', 'linux-0', 'chrome-linux64');
  fs.mkdirSync(chrome, { recursive: true });
  fs.writeFileSync(path.join(chrome, 'chrome'), '', { mode: 0o755 });
  return home;
}

// The PATH both servers get: the system's directories (and node's), none of the user's.
// Desktop Commander runs `python3 --version` synchronously (blocking its event loop) for
// every telemetry event it builds, even with telemetry off, several times a tool call: with
// a version manager's shim first on PATH (pyenv's bash scripts take about 0.5 s) it would
// pay for this machine's setup rather than for its own design.
export function serverPath() {
  const dirs = [path.dirname(process.execPath), '/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
  return [...new Set(dirs)].join(':');
}

// serverSpec describes how to launch each server under test.
// OLD names the build a run compares against (bench/run --old=<rev>).
export const OLD = 'mcp-harness (old)';

// name tells builds apart ('mcp-harness', or 'mcp-harness (old)' for the build a run
// compares against); kind says which tools it has.
export function harnessSpec(bin, workspace, extraArgs = [], name = 'mcp-harness') {
  return {
    name,
    kind: 'harness',
    command: path.resolve(bin),
    args: ['stdio', '--workspace', workspace, '--log-level', 'warn', ...extraArgs],
    env: { PATH: serverPath() },
    cwd: workspace,
  };
}

export function desktopCommanderSpec(entry, home, cwd) {
  return {
    name: 'Desktop Commander',
    // node itself, not npx: the process we measure is the server.
    command: process.execPath,
    args: [entry],
    env: { HOME: home, PATH: serverPath(), DESKTOP_COMMANDER_DISABLE_TELEMETRY: '1' },
    cwd,
  };
}

// stdioTransport is the SDK's stdio transport to the server spec ({ command, args, env, cwd })
// describes, not started yet. stderrTail gives the last 4 KiB the server wrote to stderr,
// for the error that says why it failed.
export function stdioTransport(spec) {
  const transport = new StdioClientTransport({
    command: spec.command,
    args: spec.args,
    env: spec.env,
    cwd: spec.cwd,
    stderr: 'pipe',
  });
  let tail = '';
  transport.stderr.on('data', (d) => {
    tail = (tail + d).slice(-4096);
  });
  return { transport, stderrTail: () => tail };
}

// start launches a server, connects (initialize + initialized) and lists its tools. The time
// is taken from just before the spawn to the tools/list answer.
export async function start(spec) {
  const { transport, stderrTail } = stdioTransport(spec);
  const client = new Client({ name: 'mcp-harness-bench', version: '1' });
  const t0 = performance.now();
  await client.connect(transport);
  const tools = await client.listTools();
  const ms = performance.now() - t0;
  const pid = transport.pid;
  const server = {
    spec,
    client,
    transport,
    pid,
    startMs: ms,
    tools,
    toolsListBytes: Buffer.byteLength(JSON.stringify(tools)),
    stderr: stderrTail,
    async call(name, args, timeout = 120_000) {
      const res = await client.callTool({ name, arguments: args }, undefined, { timeout });
      if (res.isError) {
        throw new Error(`${spec.name} ${name}: ${textOf(res).slice(0, 500)}`);
      }
      return res;
    },
    async close() {
      const exited = new Promise((resolve) => {
        if (!alive(pid)) return resolve();
        const t = setInterval(() => {
          if (!alive(pid)) {
            clearInterval(t);
            resolve();
          }
        }, 20);
        t.unref();
      });
      await client.close();
      let timer;
      await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, 10_000)))]);
      clearTimeout(timer);
    },
  };
  return server;
}

export function textOf(res) {
  return (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

export function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z /.test(stat);
  } catch {
    return false;
  }
}

// memory returns VmRSS and VmHWM (peak) of a process in KiB.
export function memory(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (k) => Number((status.match(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm')) || [])[1]);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

const clockTicks = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

// cpu returns a process's own CPU time (user + system) and that of its reaped children, in ms.
export function cpu(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // after the command: state(0) ... utime(11) stime(12) cutime(13) cstime(14)
  const ms = (n) => (Number(n) * 1000) / clockTicks;
  return { self: ms(f[11]) + ms(f[12]), children: ms(f[13]) + ms(f[14]) };
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// rotated is xs begun at its r-th entry and wrapped around: repetition r of a benchmark
// takes its turns in this order, so that no one always follows the same other and a load
// that comes and goes falls on all of them alike.
export function rotated(xs, r) {
  return xs.map((_, i) => xs[(i + r) % xs.length]);
}

// interleave calls every function of runs (name -> async function) reps times, the order
// rotating from one repetition to the next (see rotated), and gives each name's results in
// the order they came.
export async function interleave(runs, reps) {
  const names = Object.keys(runs);
  const res = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < reps; r++) {
    for (const n of rotated(names, r)) res[n].push(await runs[n]());
  }
  return res;
}

export function median(xs) {
  return quantile(xs, 0.5);
}

// quantile interpolates linearly between the closest ranks (q = 0.25 and 0.75 give the
// middle half); NaN for no values.
export function quantile(xs, q) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

// spread summarizes repeated measurements: the median and the middle half (p25, p75).
export function spread(xs) {
  return { median: quantile(xs, 0.5), p25: quantile(xs, 0.25), p75: quantile(xs, 0.75), n: xs.length };
}

// threads lists a process's threads with their nice value and CPU time in ms (user +
// system), from /proc/<pid>/task/*/stat; a thread that ends while being read is skipped.
export function threads(pid) {
  const out = [];
  let tids = [];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // after the command: state(0) ... utime(11) stime(12) ... priority(15) nice(16)
      out.push({ tid: Number(tid), nice: Number(f[16]), cpuMs: ((Number(f[11]) + Number(f[12])) * 1000) / clockTicks });
    } catch {
      // gone
    }
  }
  return out;
}

// capture runs a program with stdin closed and resolves, once it has exited, with its exit
// code, everything it wrote to stdout and stderr, and the wall time from just before the
// spawn to its exit; it rejects only when the program cannot start. opts go to spawn (cwd,
// env).
export function capture(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, out, err, wallMs: performance.now() - t0 }));
  });
}

// log writes progress to stderr, so stdout carries only the table.
export function log(...args) {
  process.stderr.write(`[bench] ${args.join(' ')}\n`);
}
