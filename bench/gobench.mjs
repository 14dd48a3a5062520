// The Go benchmarks this comparison reuses, run with `go test -bench` and parsed:
//
//   - BenchmarkDAG (tasks/bench_test.go): the engine in-process against make -j, ninja -j and
//     the spawn floor (a plain loop running the same `bash -c true` processes at the same
//     parallelism) on chain-200, fanout-1000 and layered-1000 graphs of `true`;
//   - BenchmarkTasksStatusTail (tools/bench_test.go): the tasks_status handler reading the
//     tail of a 1 KiB log and of a 1 GiB one.
//
// Medians over repetitions (5 in the full run, 1 in quick mode).

import { spawn } from 'node:child_process';
import path from 'node:path';
import { benchDir, median, log } from './lib/mcp.mjs';

const repo = path.dirname(benchDir);

function run(cmd, args, cwd) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('error', reject);
    p.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${(out + err).slice(-2000)}`));
      resolve(out);
    });
  });
}

// parse returns, for every benchmark name (without the -GOMAXPROCS suffix), the results of
// its runs, each a map of unit to value. A skipped benchmark (make or ninja not installed)
// has none.
export function parse(out) {
  const res = {};
  for (const line of out.split('\n')) {
    const m = line.match(/^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$/);
    if (!m) continue;
    const metrics = {};
    const parts = m[3].trim().split(/\s+/);
    for (let i = 0; i + 1 < parts.length; i += 2) metrics[parts[i + 1]] = Number(parts[i]);
    (res[m[1]] ||= []).push(metrics);
  }
  return res;
}

// A package's test binary, built once; each sub-benchmark then runs in its own invocation,
// in an order that rotates from one repetition to the next, so that a busy moment of the
// machine does not fall on one runner's whole measurement (go test -count repeats a
// sub-benchmark back to back).
async function testBinary(pkg) {
  const bin = path.join(benchDir, '.bin', `${pkg}.test`);
  log(`go test -c ./${pkg}/`);
  await run('go', ['test', '-c', '-o', bin, `./${pkg}/`], repo);
  return async (bench, benchtime) => {
    const out = await run(bin, ['-test.run', '^$', '-test.bench', bench, '-test.benchtime', benchtime], path.join(repo, pkg));
    return parse(out);
  };
}

export async function runGoBench({ quick }) {
  const out = {};

  // Quick mode runs the smallest shape only (the others take seconds an iteration).
  const shapes = quick ? ['chain-200'] : ['chain-200', 'fanout-1000', 'layered-1000'];
  const runners = ['engine', 'make', 'ninja', 'spawn-floor'];
  const reps = quick ? 1 : 5;
  const dagBench = await testBinary('tasks');
  const times = {};
  for (let r = 0; r < reps; r++) {
    for (const shape of shapes) {
      for (let k = 0; k < runners.length; k++) {
        const runner = runners[(k + r) % runners.length];
        const res = await dagBench(`^BenchmarkDAG$/^${shape}$/^${runner}$`, '1x');
        const ns = res[`BenchmarkDAG/${shape}/${runner}`]?.[0]?.['ns/op'];
        if (Number.isFinite(ns)) ((times[shape] ||= {})[runner] ||= []).push(ns / 1e6);
      }
    }
    log(`go DAG repetition ${r + 1}/${reps} done`);
  }
  out.dag = {};
  for (const shape of shapes) {
    const s = {};
    for (const runner of runners) {
      const xs = times[shape]?.[runner];
      s[runner] = xs?.length ? median(xs) : null;
    }
    if (s.engine == null) throw new Error(`BenchmarkDAG/${shape}/engine: no result`);
    out.dag[shape] = s;
  }
  out.dagReps = reps;
  log(`go DAG: ${JSON.stringify(out.dag)}`);

  const tailBench = await testBinary('tools');
  const sizes = ['log-1024B', 'log-1073741824B'];
  const tail = {};
  out.tailReps = quick ? 1 : 5;
  for (let r = 0; r < out.tailReps; r++) {
    for (let k = 0; k < sizes.length; k++) {
      const size = sizes[(k + r) % sizes.length];
      const res = await tailBench(`^BenchmarkTasksStatusTail$/^${size}$`, quick ? '200x' : '1s');
      const ns = res[`BenchmarkTasksStatusTail/${size}`]?.[0]?.['ns/op'];
      if (!Number.isFinite(ns)) throw new Error(`BenchmarkTasksStatusTail/${size}: no result`);
      (tail[size] ||= []).push(ns);
    }
  }
  out.tail = { smallUs: median(tail['log-1024B']) / 1e3, bigUs: median(tail['log-1073741824B']) / 1e3 };
  log(`go tail: ${JSON.stringify(out.tail)}`);
  return out;
}
