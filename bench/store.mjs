// Store throughput: graphs submitted per second through tasks_run, each client submitting
// its next graph as soon as the answer to the last one came back. Two mcp-harness servers on
// one workspace (two clients open on one project: one SQLite database, WAL, BEGIN IMMEDIATE)
// against one server alone on a workspace of its own, the baseline.

import fs from 'node:fs';
import { start, harnessSpec, tempDir, removeDir, log } from './lib/mcp.mjs';

// A small graph: build, then test and lint.
function graph(i) {
  return {
    name: `g${i}`,
    tasks: [
      { id: 'build', command: 'true' },
      { id: 'test', command: 'true', dependsOn: ['build'] },
      { id: 'lint', command: 'true', dependsOn: ['build'] },
    ],
  };
}

async function submitAll(srv, n) {
  const ids = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const r = await srv.call('tasks_run', graph(i));
    ids.push(r.structuredContent.graphId);
  }
  return { ms: performance.now() - t0, ids };
}

// drain waits for every submitted graph to finish, so that shutting the server down does
// not cut them short (and the next measurement starts on a quiet machine).
async function drain(srv, ids) {
  for (const id of ids) {
    let st;
    do {
      st = (await srv.call('tasks_status', { graphId: id, waitMs: 30_000, logTail: 512 })).structuredContent;
    } while (st.status === 'running');
    if (st.status !== 'succeeded') {
      const bad = st.tasks.filter((t) => t.state !== 'succeeded').map((t) => JSON.stringify(t).slice(0, 600));
      throw new Error(`store: graph ${id} ${st.status}: ${bad.join('; ')}`);
    }
  }
}

export async function runStore({ bin, quick }) {
  const n = quick ? 5 : 100;
  const out = { graphsPerServer: n, tasksPerGraph: 3 };

  // One server alone.
  {
    const ws = tempDir('store-one');
    let srv;
    try {
      srv = await start(harnessSpec(bin, ws));
      await srv.call('tasks_run', graph(-1)); // warm-up: the first write creates the tables' pages
      const r = await submitAll(srv, n);
      out.oneServer = { graphsPerSec: (n * 1000) / r.ms, ms: r.ms };
      const t = performance.now();
      await drain(srv, r.ids);
      log(`store: one server submitted ${n} graphs in ${r.ms.toFixed(0)} ms; they finished ${(performance.now() - t).toFixed(0)} ms later`);
    } finally {
      await srv?.close();
      removeDir(ws);
    }
  }

  // Two servers on one workspace, submitting at the same time.
  {
    const ws = tempDir('store-two');
    let a;
    let b;
    try {
      a = await start(harnessSpec(bin, ws));
      b = await start(harnessSpec(bin, ws));
      await a.call('tasks_run', graph(-1));
      await b.call('tasks_run', graph(-2));
      const t0 = performance.now();
      const [ra, rb] = await Promise.all([submitAll(a, n), submitAll(b, n)]);
      const ms = performance.now() - t0;
      out.twoServers = {
        graphsPerSec: (2 * n * 1000) / ms,
        ms,
        perServer: [(n * 1000) / ra.ms, (n * 1000) / rb.ms],
      };
      const t = performance.now();
      await Promise.all([drain(a, ra.ids), drain(b, rb.ids)]);
      log(`store: two servers submitted ${2 * n} graphs in ${ms.toFixed(0)} ms; they finished ${(performance.now() - t).toFixed(0)} ms later`);
      // Each server sees the other's graphs.
      const seen = (await a.call('tasks_list', { graphId: rb.ids[0] })).structuredContent;
      if (!seen.tasks.length) throw new Error('store: a server does not see the other server\'s graph');
    } finally {
      await Promise.all([a?.close(), b?.close()]);
      removeDir(ws);
    }
  }
  log(`store: ${JSON.stringify(out)}`);
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const res = await runStore({ bin: process.argv[2], quick: process.argv.includes('--quick') });
  fs.writeSync(1, JSON.stringify(res, null, 2) + '\n');
}
