// Task DAGs through the real server against the tools people run instead, on the same
// generated graphs, in one process, repetitions interleaved with the order rotating, so
// that a busy moment of this shared machine falls on every runner alike. Runners:
//
//   engine       mcp-harness over stdio as an agent uses it (issue 29): a fresh server on a
//                fresh workspace for each repetition (its start is not timed), tasks_run of
//                the graph (every task `true`, which the engine execs without a shell, as
//                make does for a plain command), then tasks_status with waitMs and its
//                default arguments (log tails included) until the graph is done.
//   engine-tail0 the same with logTail 0: the answer without log text, which is how this
//                bench measured before issue 29.
//   engine-nosandbox the same as engine with `--sandbox off`: what the sandbox (on by
//                default) costs a task start, the way a client sees it (issue 29: ≤ 1.1x).
//   make-shell   GNU make -j with SHELL := /bin/bash and the recipe `true;`: a bash per
//                recipe. The issue's target baseline.
//   make         GNU make -j with its default /bin/sh and the recipe `true`: make execs
//                /usr/bin/true itself (its fast path; with SHELL set to bash, make 4.3 runs
//                bash for every recipe, even a plain one).
//   ninja        ninja -j with `command = true` (ninja always runs `/bin/sh -c`: one dash
//                a task, whose builtin true ends it).
//   ninja-bash   ninja -j with `command = bash -c true` (dash execs bash: like with like
//                for make-shell).
//   xargs        `seq N | xargs -P<j> -n1 bash -c true`, for graphs without dependencies.
//   engine-old   with bench/run --old=<rev>: that build of mcp-harness, the same way as
//                engine (a fresh server and workspace each repetition, default arguments).
//
// Measured: wall time, the CPU time of the runner with everything it ran, and for the
// engine the server's own CPU time (user + system of the server process, /proc). Medians
// with the middle half (25th to 75th percentile); the ratio engine ÷ make-shell is taken
// from the medians of the same run, and also per repetition (the two runs closest in time).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { start, harnessSpec, OLD, tempDir, removeDir, cpu, spread, median, log, capture, interleave } from './lib/mcp.mjs';

// A small seeded generator (mulberry32), so every runner gets the same layered graph.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Shapes: deps[i] lists the indexes task i depends on (always lower indexes).
export function independent(n) {
  return { name: `independent-${n}`, deps: Array.from({ length: n }, () => []) };
}
export function chain(n) {
  return { name: `chain-${n}`, deps: Array.from({ length: n }, (_, i) => (i ? [i - 1] : [])) };
}
export function fanout(n) {
  return { name: `fanout-${n}`, deps: Array.from({ length: n }, (_, i) => (i ? [0] : [])) };
}
// layered: layers of `width` tasks, each depending on one to three random tasks of the
// layer before.
export function layered(n, width, seed = 1) {
  const r = rng(seed);
  const deps = [];
  for (let i = 0; i < n; i++) {
    const d = new Set();
    if (i >= width) {
      const layerStart = (Math.floor(i / width) - 1) * width;
      const k = 1 + Math.floor(r() * 3);
      for (let j = 0; j < k; j++) d.add(layerStart + Math.floor(r() * width));
    }
    deps.push([...d]);
  }
  return { name: `layered-${n}`, deps };
}

// makefile: shell is the SHELL line ('' keeps make's default /bin/sh and its fast path).
function makefile(sh, shell, recipe) {
  const ids = sh.deps.map((_, i) => `t${i}`).join(' ');
  let s = `${shell ? `SHELL := ${shell}\n` : ''}.PHONY: all ${ids}\nall: ${ids}\n`;
  sh.deps.forEach((deps, i) => {
    s += `t${i}:${deps.map((d) => ` t${d}`).join('')}\n\t@${recipe}\n`;
  });
  return s;
}

// ninja: each task is an edge whose output is never created (so every run runs all of
// them), ordered after its dependencies.
function ninjafile(sh, command) {
  let s = `rule run\n  command = ${command}\n`;
  sh.deps.forEach((deps, i) => {
    s += `build s${i}: run${deps.length ? ' ||' + deps.map((d) => ` s${d}`).join('') : ''}\n`;
  });
  s += `build all: phony${sh.deps.map((_, i) => ` s${i}`).join('')}\ndefault all\n`;
  return s;
}

export function have(tool) {
  return (process.env.PATH || '').split(':').some((d) => {
    try {
      fs.accessSync(path.join(d, tool), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

// runScript runs a bash script (make, ninja, xargs) and reads, with the `times` builtin,
// the CPU time of everything it ran.
export async function runScript(dir, script) {
  const { code, out, err, wallMs } = await capture('bash', ['-c', `{ ${script} ; } >/dev/null || exit $?; times`], { cwd: dir });
  if (code !== 0) throw new Error(`${script} exited ${code}: ${err.slice(-500)}`);
  // times: the shell's user/sys, then its children's.
  const secs = out.trim().split('\n').join(' ').match(/(\d+)m([\d.]+)s/g).map((x) => {
    const [, m, s] = x.match(/(\d+)m([\d.]+)s/);
    return Number(m) * 60 + Number(s);
  });
  return { wallMs, cpuMs: secs.reduce((a, b) => a + b, 0) * 1000 };
}

// runEngine runs the graph on a fresh server (spec's binary) and workspace, as an agent's
// new session would; statusArgs are tasks_status's arguments besides graphId and waitMs.
async function runEngine(spec, sh, command, parallel, statusArgs = {}) {
  const ws = tempDir('dag-ws');
  let srv;
  try {
    srv = await start(harnessSpec(spec.bin, ws, ['--max-parallel', String(parallel), ...(spec.args || [])], spec.name));
    return await timeEngine(srv, sh, command, parallel, statusArgs);
  } finally {
    await srv?.close();
    removeDir(ws);
  }
}

async function timeEngine(srv, sh, command, parallel, statusArgs) {
  const tasks = sh.deps.map((deps, i) => ({
    id: `t${i}`,
    command,
    ...(deps.length ? { dependsOn: deps.map((d) => `t${d}`) } : {}),
  }));
  const c0 = cpu(srv.pid);
  const t0 = performance.now();
  const run = await srv.call('tasks_run', { name: sh.name, tasks, maxParallel: parallel });
  const id = run.structuredContent.graphId;
  let st;
  do {
    st = (await srv.call('tasks_status', { graphId: id, waitMs: 30_000, ...statusArgs })).structuredContent;
  } while (st.status === 'running');
  const wall = performance.now() - t0;
  const c1 = cpu(srv.pid);
  if (st.status !== 'succeeded') throw new Error(`mcp-harness graph ${sh.name}: ${st.status}`);
  return {
    wallMs: wall,
    serverCpuMs: c1.self - c0.self,
    cpuMs: c1.self - c0.self + (c1.children - c0.children),
  };
}

// The runners for a graph of `command` (`true`, or another plain command). Each writes its
// own files in dir.
function runnersFor(bin, oldBin, dir, sh, command, parallel) {
  const j = String(parallel);
  const files = {
    'Makefile.shell': makefile(sh, '/bin/bash', `${command};`),
    'Makefile.direct': makefile(sh, '', command),
    'build.ninja': ninjafile(sh, command),
    'bash.ninja': ninjafile(sh, `bash -c '${command}'`),
  };
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  const ninja = (file) => () => {
    fs.rmSync(path.join(dir, '.ninja_log'), { force: true });
    return runScript(dir, `ninja -f ${file} -j ${j} --quiet`);
  };
  const all = {
    engine: () => runEngine({ bin }, sh, command, parallel),
    'engine-tail0': () => runEngine({ bin }, sh, command, parallel, { logTail: 0 }),
    'engine-nosandbox': () => runEngine({ bin, args: ['--sandbox', 'off'] }, sh, command, parallel),
    'engine-old': oldBin && (() => runEngine({ bin: oldBin, name: OLD }, sh, command, parallel)),
    'make-shell': have('make') && (() => runScript(dir, `make -s -f Makefile.shell -j ${j} all`)),
    make: have('make') && (() => runScript(dir, `make -s -f Makefile.direct -j ${j} all`)),
    ninja: have('ninja') && ninja('build.ninja'),
    'ninja-bash': have('ninja') && ninja('bash.ninja'),
    xargs: sh.deps.every((d) => d.length === 0) && (() => runScript(dir, `seq ${sh.deps.length} | xargs -P ${j} -n 1 bash -c '${command}'`)),
  };
  return Object.fromEntries(Object.entries(all).filter(([, fn]) => fn));
}

// runCase runs one graph with each runner, `reps` times, the order rotating.
async function runCase(bin, oldBin, dir, sh, command, parallel, reps, only) {
  let runners = runnersFor(bin, oldBin, dir, sh, command, parallel);
  if (only) runners = Object.fromEntries(Object.entries(runners).filter(([n]) => only.includes(n)));
  const names = Object.keys(runners);
  const res = await interleave(runners, reps);
  const c = {
    name: `${sh.name} × \`${command}\``,
    shape: sh.name,
    command,
    tasks: sh.deps.length,
    wide: !sh.name.startsWith('chain'),
    reps,
    runners: {},
  };
  for (const n of names) {
    c.runners[n] = {
      wall: spread(res[n].map((x) => x.wallMs)),
      cpu: spread(res[n].map((x) => x.cpuMs)),
      wallMs: median(res[n].map((x) => x.wallMs)),
      cpuMs: median(res[n].map((x) => x.cpuMs)),
      samplesMs: res[n].map((x) => Math.round(x.wallMs)),
      ...(n.startsWith('engine') ? { serverCpu: spread(res[n].map((x) => x.serverCpuMs)) } : {}),
    };
  }
  // Per repetition: engine ÷ make-shell of the same round.
  if (res.make) c.pairedRatioMake = spread(res.engine.map((e, i) => e.wallMs / res.make[i].wallMs));
  if (res['make-shell']) {
    c.pairedRatio = spread(res.engine.map((e, i) => e.wallMs / res['make-shell'][i].wallMs));
    if (res['engine-old']) c.pairedRatioOld = spread(res['engine-old'].map((e, i) => e.wallMs / res['make-shell'][i].wallMs));
  }
  return c;
}

export async function runDag({ bin, oldBin, quick }) {
  const parallel = 2; // the issue's "2 slots"; also this machine's CPU count
  // At least 10 repetitions of the `true` graphs (the issue's rule); the `sleep 0.05`
  // graphs show that the overhead vanishes once tasks do anything, and need fewer.
  const reps = quick ? 2 : 11;
  const cases = quick
    ? [
      { sh: independent(100), command: 'true', reps },
      { sh: chain(20), command: 'true', reps },
      { sh: layered(20, 5, 7), command: 'sleep 0.05', reps: 1, only: ['engine', 'make-shell'] },
    ]
    : [
      { sh: independent(1000), command: 'true', reps },
      { sh: chain(200), command: 'true', reps },
      { sh: fanout(100), command: 'sleep 0.05', reps: 3, only: ['engine', 'make-shell'] },
      { sh: layered(100, 10, 7), command: 'sleep 0.05', reps: 3, only: ['engine', 'make-shell'] },
    ];
  const out = { parallel, cases: [] };
  for (const { sh, command, reps: n, only } of cases) {
    const dir = tempDir('dag-tool');
    try {
      const c = await runCase(bin, oldBin, dir, sh, command, parallel, n, only && [...only, 'engine-old']);
      log(`dag ${c.name}: ${Object.entries(c.runners).map(([k, v]) => `${k} ${v.wallMs.toFixed(0)} ms`).join(', ')}`);
      out.cases.push(c);
    } finally {
      removeDir(dir);
    }
  }
  out.cpus = os.availableParallelism();
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const res = await runDag({ bin: process.argv[2], quick: process.argv.includes('--quick') });
  fs.writeSync(1, JSON.stringify(res, null, 2) + '\n');
}
