// A big log written by a real task through the server, then what follows the end of its
// graph: reading its tail with tasks_status against the tail of a 1 KB log, and the
// archiving the server does by itself (every finished graph is written to
// <artifacts>/<graphId>.tar.gz as soon as it ends: tasks/spool.go, no flag needed), against
// `gzip -1` of the same file in the same run.
//
// Two producers, each on a fresh server, each writing 1 GB (20 MB in quick mode):
//
//   random    `base64 -w 76 /dev/urandom | head -c N`: lines of random base64, which
//             gzip shrinks to about 0.77 of their size and compresses slowest: the worst
//             case, and the data of the old figure (a 763 MB archive of 1 GB);
//   log-like  a counter, fixed words and 12 random base64 characters a line
//             (`paste` of `seq` and `base64`): gzip -1 shrinks it to about 0.30, closer to
//             what a build or test log does.
//
// Measured, for archiving: the time from the graph's end (its finishedAt) to the artifact
// under its final name, the server's CPU time over that span (/proc/<pid>/stat) and that
// of its threads at nice 19 (/proc/<pid>/task/*/stat, sampled every 20 ms: the archiving
// thread lowers itself to nice 19, which this checks), the archive's size; for gzip -1
// (GNU gzip, writing to a file beside the log, no fsync where the server syncs its
// archive): wall and CPU time and size. The tail: median of tasks_status round trips
// (default logTail, one taskId) on the big log and on the 1 KB one, alternating, once the
// archive is written (so that the archiving does not slow the reads down). With
// bench/run --old=<rev>, that build does the same right after, on a server of its own
// (compared with the same gzip -1 figure).

import fs from 'node:fs';
import path from 'node:path';
import { start, harnessSpec, OLD, tempDir, removeDir, cpu, threads, memory, spread, log, sleep } from './lib/mcp.mjs';
import { runScript } from './dag.mjs';

export const producers = {
  random: (n) => `base64 -w 76 /dev/urandom | head -c ${n}`,
  'log-like': (n) => `paste -d ' ' <(seq -f '%.0f INFO worker: finished job' 1 ${Math.ceil(n / 20)}) <(base64 -w 12 /dev/urandom) | head -c ${n}`,
};

// A 1 KB log: 1023 spaces and x, then a newline.
const smallCommand = "printf '%1024s\\n' x";

async function waitDone(srv, graphId) {
  for (;;) {
    const st = (await srv.call('tasks_status', { graphId, waitMs: 30_000, logTail: 0 }, 600_000)).structuredContent;
    if (st.status !== 'running') return st;
  }
}

// findLog returns the big log's file: the path tasks_status gives, or, if the engine keeps
// logs some other way, the largest file in the state directory outside the artifacts.
function findLog(stateDir, reported) {
  if (reported && fs.existsSync(reported)) return reported;
  let best = null;
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory() && e.name !== 'artifacts') walk(p);
      else if (e.isFile()) {
        const size = fs.statSync(p).size;
        if (!best || size > best.size) best = { p, size };
      }
    }
  };
  walk(stateDir);
  return best?.p;
}

async function one({ bin, name, kind, bytes, tailCalls, withGzip }) {
  const ws = tempDir(`archive-ws-${kind}`);
  const stateDir = path.join(ws, '.mcp-harness');
  const artifactsDir = path.join(stateDir, 'artifacts');
  let srv;
  try {
    srv = await start(harnessSpec(bin, ws, [], name));
    const t0 = performance.now();
    const run = await srv.call('tasks_run', {
      name: `archive-${kind}`,
      tasks: [
        { id: 'big', command: producers[kind](bytes) },
        { id: 'small', command: smallCommand },
      ],
    });
    const graphId = run.structuredContent.graphId;
    const st = await waitDone(srv, graphId);
    const cpuAtEnd = cpu(srv.pid);
    const writeMs = performance.now() - t0;
    if (st.status !== 'succeeded') throw new Error(`archive ${kind}: graph ${st.status}`);
    const finishedAt = Date.parse(st.finishedAt);

    // Archiving runs by itself from the graph's end: watch for the artifact, and sample the
    // server's threads meanwhile.
    const final = path.join(artifactsDir, `${graphId}.tar.gz`);
    const lowThreads = new Map(); // tid -> the most CPU seen, of threads at nice 19
    const nices = new Set();
    const deadline = performance.now() + 600_000;
    let doneAt;
    for (;;) {
      for (const t of threads(srv.pid)) {
        nices.add(t.nice);
        if (t.nice === 19) lowThreads.set(t.tid, Math.max(lowThreads.get(t.tid) || 0, t.cpuMs));
      }
      if (fs.existsSync(final)) {
        doneAt = Date.now();
        break;
      }
      if (performance.now() > deadline) throw new Error(`archive ${kind}: no artifact after 10 minutes`);
      await sleep(20);
    }
    const cpuAtArchive = cpu(srv.pid);
    // The store records the artifact right after the rename.
    let art;
    for (let i = 0; i < 500 && !art; i++) {
      art = (await srv.call('tasks_status', { graphId, taskIds: ['small'], logTail: 0 })).structuredContent.artifact;
      if (!art) await sleep(10);
    }
    if (!art) throw new Error(`archive ${kind}: the artifact is on disk but tasks_status does not show it`);

    // Tails, alternating, after the archiving.
    const tails = { big: [], small: [] };
    let bigLog;
    for (let i = 0; i < tailCalls; i++) {
      for (const id of i % 2 ? ['small', 'big'] : ['big', 'small']) {
        const c0 = performance.now();
        const r = await srv.call('tasks_status', { graphId, taskIds: [id] });
        tails[id].push(performance.now() - c0);
        const l = r.structuredContent.tasks[0].log;
        if (!l?.text) throw new Error(`archive ${kind}: tasks_status gave no tail of ${id}`);
        if (id === 'big') bigLog = l;
      }
    }
    const peakKiB = memory(srv.pid).hwm;

    // gzip -1 of the same file.
    const file = findLog(stateDir, bigLog?.path);
    const logBytes = fs.statSync(file).size;
    let gzip = null;
    if (withGzip) {
      const gzOut = path.join(ws, 'gzip-1.out.gz');
      const gz = await runScript(ws, `gzip -1 -c '${file}' > '${gzOut}'`);
      const gzBytes = fs.statSync(gzOut).size;
      fs.rmSync(gzOut, { force: true });
      gzip = { ms: gz.wallMs, cpuMs: gz.cpuMs, bytes: gzBytes, ratio: gzBytes / logBytes };
    }

    const lowCpuMs = [...lowThreads.values()].reduce((a, b) => a + b, 0);
    const out = {
      kind,
      producer: producers[kind](bytes),
      logBytes,
      writeMs,
      archive: {
        ms: doneAt - finishedAt,
        serverCpuMs: cpuAtArchive.self - cpuAtEnd.self,
        lowPriorityCpuMs: lowCpuMs,
        lowPriorityThreads: lowThreads.size,
        nicesSeen: [...nices].sort((a, b) => a - b),
        bytes: art.bytes,
        ratio: art.bytes / logBytes,
      },
      gzip,
      tail: { big: spread(tails.big), small: spread(tails.small), calls: tailCalls, bigTailBytes: Buffer.byteLength(bigLog.text) },
      serverPeakKiB: peakKiB,
    };
    log(`archive ${name} ${kind} ${logBytes} B: graph end -> archive ${out.archive.ms} ms, server CPU ${out.archive.serverCpuMs} ms ` +
      `(nice-19 threads ${lowThreads.size}, ${lowCpuMs} ms), ratio ${out.archive.ratio.toFixed(3)}; ` +
      (gzip ? `gzip -1 ${gzip.ms.toFixed(0)} ms, CPU ${gzip.cpuMs.toFixed(0)} ms, ratio ${gzip.ratio.toFixed(3)}; ` : '') +
      `tail ${out.tail.big.median.toFixed(2)} ms vs ${out.tail.small.median.toFixed(2)} ms`);
    return out;
  } finally {
    await srv?.close();
    removeDir(ws);
  }
}

export async function runArchive({ bin, oldBin, quick }) {
  const bytes = quick ? 20_000_000 : 1_000_000_000;
  const tailCalls = quick ? 5 : 30;
  const out = { bytes, runs: {}, oldRuns: oldBin ? {} : null };
  for (const kind of Object.keys(producers)) {
    out.runs[kind] = await one({ bin, name: 'mcp-harness', kind, bytes, tailCalls, withGzip: true });
    // The old build's log is the same producer's, so gzip -1 is not run again: it takes a
    // minute on the random one.
    if (oldBin) out.oldRuns[kind] = await one({ bin: oldBin, name: OLD, kind, bytes, tailCalls, withGzip: false });
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const res = await runArchive({ bin: process.argv[2], quick: process.argv.includes('--quick') });
  fs.writeSync(1, JSON.stringify(res, null, 2) + '\n');
}
