// The Go benchmarks this comparison reuses, run with `go test -bench` and parsed:
//
//   - BenchmarkDAG (tasks/bench_test.go): the engine in-process against other runners (make,
//     ninja, a spawn floor, ...) on graphs of `true`; its sub-benchmarks are named
//     <shape>/<runner>, and whatever shapes and runners it has are reported;
//   - BenchmarkTasksStatusTail (tools/bench_test.go): the tasks_status handler reading the
//     tail of its smallest log and of its largest (1 KiB and 1 GiB).
//
// Medians over repetitions (5 in the full run, 1 in quick mode).

import path from 'node:path';
import { benchDir, capture, rotated, median, spread, log } from './lib/mcp.mjs';

const repo = path.dirname(benchDir);

async function run(cmd, args, cwd) {
  const { code, out, err } = await capture(cmd, args, { cwd });
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${(out + err).slice(-2000)}`);
  return out;
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

// dagName splits "BenchmarkDAG/<shape>/<runner>" (the runner is the last part).
function dagName(name) {
  const rest = name.slice('BenchmarkDAG/'.length);
  const i = rest.lastIndexOf('/');
  return i < 0 ? null : { shape: rest.slice(0, i), runner: rest.slice(i + 1) };
}

export async function runGoBench({ quick }) {
  const out = {};

  // The shapes and runners are whatever BenchmarkDAG has: the first repetition runs it
  // whole (each sub-benchmark once) and names them; the next ones run each sub-benchmark
  // as its own invocation, the order rotating. Quick mode runs the chain shapes once.
  const reps = quick ? 1 : 5;
  const dagBench = await testBinary('tasks');
  const times = {}; // shape -> runner -> ms[]
  const add = (res) => {
    for (const [name, runs] of Object.entries(res)) {
      const d = name.startsWith('BenchmarkDAG/') && dagName(name);
      const ns = runs[0]?.['ns/op'];
      if (d && Number.isFinite(ns)) ((times[d.shape] ||= {})[d.runner] ||= []).push(ns / 1e6);
    }
  };
  add(await dagBench(quick ? '^BenchmarkDAG$/chain' : '^BenchmarkDAG$', '1x'));
  const subs = Object.entries(times).flatMap(([shape, rs]) => Object.keys(rs).map((runner) => ({ shape, runner })));
  if (!subs.length) throw new Error('BenchmarkDAG: no results');
  log(`go DAG repetition 1/${reps} done: ${subs.map((x) => `${x.shape}/${x.runner}`).join(' ')}`);
  const esc = (x) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  for (let r = 1; r < reps; r++) {
    for (const { shape, runner } of rotated(subs, r)) {
      add(await dagBench(`^BenchmarkDAG$/^${esc(shape)}$/^${esc(runner)}$`, '1x'));
    }
    log(`go DAG repetition ${r + 1}/${reps} done`);
  }
  out.dag = {};
  for (const [shape, rs] of Object.entries(times)) {
    out.dag[shape] = {};
    for (const [runner, xs] of Object.entries(rs)) out.dag[shape][runner] = spread(xs);
  }
  out.dagReps = reps;
  log(`go DAG: ${Object.entries(out.dag).map(([sh, rs]) => `${sh}: ${Object.entries(rs).map(([k, v]) => `${k} ${v.median.toFixed(0)} ms`).join(', ')}`).join('; ')}`);

  // BenchmarkTasksStatusTail: its smallest log against its largest.
  const tailBench = await testBinary('tools');
  const first = await tailBench('^BenchmarkTasksStatusTail$', quick ? '200x' : '1s');
  const sizes = Object.keys(first)
    .map((name) => ({ name, bytes: Number((name.match(/^BenchmarkTasksStatusTail\/log-(\d+)B$/) || [])[1]) }))
    .filter((x) => Number.isFinite(x.bytes))
    .sort((a, b) => a.bytes - b.bytes);
  if (sizes.length < 2) throw new Error('BenchmarkTasksStatusTail: fewer than two log sizes');
  const small = sizes[0];
  const big = sizes[sizes.length - 1];
  const tail = { [small.name]: [first[small.name][0]['ns/op']], [big.name]: [first[big.name][0]['ns/op']] };
  out.tailReps = quick ? 1 : 5;
  for (let r = 1; r < out.tailReps; r++) {
    for (const x of r % 2 ? [big, small] : [small, big]) {
      const res = await tailBench(`^BenchmarkTasksStatusTail$/^${esc(x.name.split('/')[1])}$`, '1s');
      const ns = res[x.name]?.[0]?.['ns/op'];
      if (!Number.isFinite(ns)) throw new Error(`${x.name}: no result`);
      tail[x.name].push(ns);
    }
  }
  out.tail = {
    smallBytes: small.bytes,
    bigBytes: big.bytes,
    smallUs: median(tail[small.name]) / 1e3,
    bigUs: median(tail[big.name]) / 1e3,
  };
  log(`go tail: ${JSON.stringify(out.tail)}`);
  return out;
}
