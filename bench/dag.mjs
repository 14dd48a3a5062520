// Task DAGs through the real server: the same generated graphs run by mcp-harness (tasks_run
// over stdio, then tasks_status with waitMs until the graph is finished), by `make -j` and by
// `ninja -j`, all at the machine's CPU count of parallelism, runs interleaved. Measured: wall
// time, and CPU time, both for the runner with its tasks and for the mcp-harness server
// alone (its own user + system time over the graph, from /proc).
//
// The in-process engine against make, ninja and the spawn floor on 1000 tasks of `true` is
// the Go benchmark BenchmarkDAG (tasks/bench_test.go); this adds the server's stdio path,
// its CPU time and tasks that take time (`sleep 0.05`).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { start, harnessSpec, tempDir, removeDir, cpu, median, log } from './lib/mcp.mjs';

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

function makefile(sh, command) {
  const ids = sh.deps.map((_, i) => `t${i}`).join(' ');
  let s = `SHELL := /bin/bash\n.PHONY: all ${ids}\nall: ${ids}\n`;
  sh.deps.forEach((deps, i) => {
    s += `t${i}:${deps.map((d) => ` t${d}`).join('')}\n\t@${command}\n`;
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

function have(tool) {
  return (process.env.PATH || '').split(':').some((d) => {
    try {
      fs.accessSync(path.join(d, tool), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

// runTool runs make or ninja under bash and reads, with the `times` builtin, the CPU time
// of the tool and everything it ran.
function runTool(dir, argv) {
  return new Promise((resolve, reject) => {
    const script = `${argv.map((a) => `'${a}'`).join(' ')} >/dev/null || exit $?; times`;
    const t0 = performance.now();
    const p = spawn('bash', ['-c', script], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('error', reject);
    p.on('close', (code) => {
      const wall = performance.now() - t0;
      if (code !== 0) return reject(new Error(`${argv[0]} exited ${code}: ${err.slice(-500)}`));
      // times: the shell's user/sys, then its children's.
      const lines = out.trim().split('\n');
      const secs = (lines[lines.length - 1].match(/(\d+)m([\d.]+)s/g) || []).map((x) => {
        const [, m, s] = x.match(/(\d+)m([\d.]+)s/);
        return Number(m) * 60 + Number(s);
      });
      resolve({ wallMs: wall, cpuMs: (secs[0] + secs[1]) * 1000 });
    });
  });
}

async function runHarness(srv, sh, command, parallel) {
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
    st = (await srv.call('tasks_status', { graphId: id, waitMs: 30_000, logTail: 0 })).structuredContent;
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

// runCase runs one graph with each runner, `reps` times, the order rotating.
async function runCase(srv, dir, sh, command, parallel, reps, tools) {
  fs.writeFileSync(path.join(dir, 'Makefile'), makefile(sh, command));
  fs.writeFileSync(path.join(dir, 'build.ninja'), ninjafile(sh, command));
  const runners = {
    'mcp-harness': () => runHarness(srv, sh, command, parallel),
    make: () => runTool(dir, ['make', '-s', '-j', String(parallel), 'all']),
    ninja: () => {
      fs.rmSync(path.join(dir, '.ninja_log'), { force: true });
      return runTool(dir, ['ninja', '-j', String(parallel), '--quiet']);
    },
  };
  const names = ['mcp-harness', ...tools];
  const res = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < reps; r++) {
    for (let k = 0; k < names.length; k++) {
      const n = names[(k + r) % names.length];
      res[n].push(await runners[n]());
    }
  }
  const c = { name: `${sh.name} × \`${command}\``, shape: sh.name, command, tasks: sh.deps.length, wide: !sh.name.startsWith('chain'), runners: {} };
  for (const n of names) {
    c.runners[n] = {
      wallMs: median(res[n].map((x) => x.wallMs)),
      cpuMs: median(res[n].map((x) => x.cpuMs)),
      ...(n === 'mcp-harness' ? { serverCpuMs: median(res[n].map((x) => x.serverCpuMs)) } : {}),
    };
  }
  return c;
}

export async function runDag({ bin, quick }) {
  const parallel = os.availableParallelism();
  const reps = quick ? 1 : 3;
  const cases = quick
    ? [
      { sh: fanout(20), command: 'sleep 0.05' },
      { sh: layered(20, 5, 7), command: 'sleep 0.05' },
      { sh: fanout(50), command: 'true' },
    ]
    : [
      { sh: fanout(100), command: 'sleep 0.05' },
      { sh: layered(100, 10, 7), command: 'sleep 0.05' },
      { sh: fanout(1000), command: 'true' },
    ];
  const tools = ['make', 'ninja'].filter(have);
  const ws = tempDir('dag-ws');
  const out = { parallel, reps, tools, cases: [] };
  let srv;
  try {
    srv = await start(harnessSpec(bin, ws, ['--max-parallel', String(parallel)]));
    for (const { sh, command } of cases) {
      const dir = tempDir('dag-tool');
      try {
        const c = await runCase(srv, dir, sh, command, parallel, reps, tools);
        log(`dag ${c.name}: ${JSON.stringify(c.runners)}`);
        out.cases.push(c);
      } finally {
        removeDir(dir);
      }
    }
  } finally {
    await srv?.close();
    removeDir(ws);
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const res = await runDag({ bin: process.argv[2], quick: process.argv.includes('--quick') });
  fs.writeSync(1, JSON.stringify(res, null, 2) + '\n');
}
