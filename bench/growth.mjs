// Cost as the work grows (issue 29): a graph of N tasks (the gate one of them) held behind a gate, each size on a
// fresh server and workspace (`--max-tasks 100000`), sizes interleaved with the order
// rotating. The gate is a task that sleeps until the graph is cancelled; the N others
// depend on it and stay pending, so the server holds the whole graph while it is measured
// and no task start is in the figures. Measured for each size:
//
//   - tasks_run: the call's round trip divided by the graph's tasks (what a task costs to
//     submit: validation, the store's write, the engine taking the graph on);
//   - a default tasks_status page: tasks_status with the graphId alone (the default page,
//     log tails included), median of `calls` calls one after another;
//   - the server's RSS once those answers are in (VmRSS) and its peak (VmHWM) over its life.
//
// The graph is then cancelled and the server closed.

import fs from 'node:fs';
import { start, harnessSpec, tempDir, removeDir, memory, spread, median, log, interleave } from './lib/mcp.mjs';

// The gate sleeps far longer than a measurement; tasks_cancel ends it.
const gateCommand = 'sleep 3600';

async function oneGraph(bin, n, calls) {
  const ws = tempDir(`growth-${n}`);
  const srv = await start(harnessSpec(bin, ws, ['--max-tasks', '100000', '--max-parallel', '2']));
  try {
    const tasks = [{ id: 'gate', command: gateCommand }];
    for (let i = 0; i < n - 1; i++) tasks.push({ id: `t${i}`, command: 'true', dependsOn: ['gate'] });
    const t0 = performance.now();
    const run = await srv.call('tasks_run', { name: `growth-${n}`, tasks }, 600_000);
    const runMs = performance.now() - t0;
    const graphId = run.structuredContent.graphId;
    const pageMs = [];
    let page;
    for (let i = 0; i < calls; i++) {
      const t1 = performance.now();
      page = (await srv.call('tasks_status', { graphId }, 600_000)).structuredContent;
      pageMs.push(performance.now() - t1);
    }
    if (page.progress.total !== n || page.progress.pending < n - 1) {
      throw new Error(`growth ${n}: the page shows ${JSON.stringify(page.progress)}`);
    }
    const mem = memory(srv.pid);
    await srv.call('tasks_cancel', { graphId, graceMs: 0 });
    return { runUsPerTask: (runMs * 1000) / n, runMs, pageMs: median(pageMs), pageTasks: page.tasks.length, rssKiB: mem.rss, peakKiB: mem.hwm };
  } finally {
    await srv.close();
    removeDir(ws);
  }
}

export async function runGrowth({ bin, quick }) {
  const sizes = quick ? [1000, 10000] : [1000, 10000, 100000];
  const reps = quick ? 1 : 3;
  const calls = quick ? 3 : 5;
  const ways = Object.fromEntries(sizes.map((n) => [String(n), () => oneGraph(bin, n, calls)]));
  const res = await interleave(ways, reps);
  const out = { reps, calls, sizes: {} };
  for (const n of sizes) {
    const xs = res[String(n)];
    out.sizes[n] = {
      runUsPerTask: spread(xs.map((x) => x.runUsPerTask)),
      pageMs: spread(xs.map((x) => x.pageMs)),
      rssKiB: spread(xs.map((x) => x.rssKiB)),
      peakKiB: spread(xs.map((x) => x.peakKiB)),
      pageTasks: xs[0].pageTasks,
    };
    const s = out.sizes[n];
    log(`growth ${n}: tasks_run ${s.runUsPerTask.median.toFixed(1)} µs a task, page ${s.pageMs.median.toFixed(1)} ms (${s.pageTasks} tasks), RSS ${s.rssKiB.median} KiB, peak ${s.peakKiB.median} KiB`);
  }
  return out;
}

// Run on its own: node bench/growth.mjs <mcp-harness binary> [--quick]
if (import.meta.url === `file://${process.argv[1]}`) {
  const res = await runGrowth({ bin: process.argv[2], quick: process.argv.includes('--quick') });
  fs.writeSync(1, JSON.stringify(res, null, 2) + '\n');
}
