// Terminal tools: mcp-harness against Desktop Commander, both launched over stdio and driven
// by the same client (the official TypeScript SDK). Measured for each server in the same
// run, steps interleaved so that a noisy moment of the machine hits both:
//
//   - cold start: spawn to the tools/list answer (initialize first), median of N spawns;
//   - server RSS right after that answer (VmRSS of the server process itself), median;
//   - the size of the tools/list answer in bytes (what every conversation pays in context);
//   - interactive round trip: type `echo R<n>` into a bash session and get R<n> back,
//     median of N after a warm-up;
//   - bulk output: a program that writes B bytes (20 MB), from the call that starts it to
//     the answer that shows its last line, and the server's peak RSS (VmHWM), in the two
//     shapes the servers offer, each beside its floor (see runBulk).

import fs from 'node:fs';
import {
  start, harnessSpec, OLD, desktopCommanderSpec, desktopCommanderHome, tempDir, removeDir,
  memory, median, spread, textOf, log, sleep, serverPath, capture, interleave,
} from './lib/mcp.mjs';

export async function runTerminal({ bin, oldBin, dc, quick }) {
  const cfg = quick
    ? { spawns: 1, warmSpawns: 0, trips: 2, warmTrips: 1, tripPauseMs: 200, bulkBytes: 1_000_000, bulkReps: 1 }
    : { spawns: 10, warmSpawns: 1, trips: 30, warmTrips: 3, tripPauseMs: 200, bulkBytes: 20_000_000, bulkReps: 5 };
  const ws = tempDir('term-ws');
  const dcHome = dc ? desktopCommanderHome() : null;
  const dcCwd = dc ? tempDir('dc-cwd') : null;
  const specs = [harnessSpec(bin, ws)];
  // The old build gets a workspace of its own: its database may have another schema.
  const wsOld = oldBin && tempDir('term-ws-old');
  if (oldBin) specs.push(harnessSpec(oldBin, wsOld, [], OLD));
  if (dc) specs.push(desktopCommanderSpec(dc.entry, dcHome, dcCwd));
  const out = { config: cfg, servers: {} };
  for (const s of specs) out.servers[s.name] = { startMs: [], rssKiB: [] };
  try {
    // Cold start and RSS, interleaved.
    for (let i = 0; i < cfg.warmSpawns + cfg.spawns; i++) {
      for (const spec of specs) {
        const srv = await start(spec);
        try {
          const mem = memory(srv.pid);
          const r = out.servers[spec.name];
          r.toolsListBytes = srv.toolsListBytes;
          r.tools = srv.tools.tools.length;
          if (i >= cfg.warmSpawns) {
            r.startMs.push(srv.startMs);
            r.rssKiB.push(mem.rss);
          }
          log(`cold start ${spec.name}: ${srv.startMs.toFixed(1)} ms, RSS ${mem.rss} KiB`);
        } finally {
          await srv.close();
        }
      }
    }
    for (const spec of specs) {
      const r = out.servers[spec.name];
      r.startMedianMs = median(r.startMs);
      r.rssMedianKiB = median(r.rssKiB);
    }

    // Interactive round trips: one long-lived server each, both warmed up first.
    const sessions = [];
    try {
      for (const spec of specs) {
        const s = { spec, srv: await start(spec) };
        sessions.push(s);
        s.shell = await openShell(s.srv);
      }
      const trips = {};
      for (let n = 1; n <= cfg.warmTrips + cfg.trips; n++) {
        for (const { spec, srv, shell } of sessions) {
          for (const flow of shell.flows) {
            const key = `${spec.name}\t${flow.name}`;
            const v = n * 1000 + Math.floor(Math.random() * 1000);
            // An agent's calls come seconds apart; back to back, what Desktop Commander
            // does after answering the previous call (building telemetry events, which
            // runs `python3 --version` synchronously, and saving usage stats) would still
            // be running and slow the next one down.
            await sleep(cfg.tripPauseMs);
            const t0 = performance.now();
            await flow.trip(v);
            const ms = performance.now() - t0;
            if (n > cfg.warmTrips) (trips[key] ||= []).push(ms);
          }
        }
      }
      for (const { spec, srv } of sessions) {
        const r = out.servers[spec.name];
        r.roundTrip = {};
        for (const [key, xs] of Object.entries(trips)) {
          const [name, flow] = key.split('\t');
          if (name === spec.name) r.roundTrip[flow] = median(xs);
        }
        // The peer's best flow is its baseline.
        r.roundTripMs = Math.min(...Object.values(r.roundTrip));
        r.roundTripFlow = Object.entries(r.roundTrip).find(([, v]) => v === r.roundTripMs)[0];
        log(`round trip ${spec.name}: ${JSON.stringify(r.roundTrip)}`);
        r.rssAfterTripsKiB = memory(srv.pid).rss;
      }
    } finally {
      for (const { srv } of sessions) await srv.close();
    }

    // Bulk output, in both shapes, repetitions interleaved with the order rotating; a
    // fresh server for every measurement, so that its peak RSS belongs to it.
    out.bulk = await runBulk({ specs, bytes: cfg.bulkBytes, reps: cfg.bulkReps });
  } finally {
    removeDir(ws);
    if (wsOld) removeDir(wsOld);
    if (dcHome) removeDir(dcHome);
    if (dcCwd) removeDir(dcCwd);
  }
  return out;
}

const valueLine = (v) => new RegExp(`(^|\\n)R${v}\\r?(\\n|$)`);

// openShell starts an interactive bash in the server's terminal session and returns the
// ways of doing one round trip with it (for a peer with more than one way, the fastest
// is its baseline).
async function openShell(srv) {
  if (srv.spec.kind === 'harness') {
    const res = await srv.call('shell_open', {
      command: 'exec bash --norc --noprofile -i',
      env: { PS1: '$ ' },
      waitFor: '\\$ $',
    });
    const id = res.structuredContent.sessionId;
    return {
      flows: [{
        name: 'shell_io with waitFor',
        async trip(v) {
          const r = await srv.call('shell_io', {
            sessionId: id,
            input: `echo R$((${v}))\n`,
            waitFor: `(?m)^R${v}$`,
          });
          if (r.structuredContent.reason !== 'matched' || !valueLine(v).test(r.structuredContent.output)) {
            throw new Error(`mcp-harness round trip: ${textOf(r).slice(0, 300)}`);
          }
        },
      }],
    };
  }
  // Desktop Commander runs programs on pipes, not a terminal: bash -i then prints its
  // prompt on stderr, where interact_with_process's prompt detection does not see it (it
  // waits for its 8 s timeout), so the prompt is sent to stdout with 2>&1.
  const res = await srv.call('start_process', {
    command: "PS1='$ ' exec bash --norc --noprofile -i 2>&1",
    shell: '/bin/bash',
    timeout_ms: 10_000,
  });
  const pid = Number((textOf(res).match(/PID (\d+)/) || [])[1]);
  if (!pid) throw new Error(`Desktop Commander start_process: ${textOf(res).slice(0, 300)}`);
  // readUntil reads new output until the value's line shows up.
  const readUntil = async (v, seen) => {
    const deadline = performance.now() + 15_000;
    while (!valueLine(v).test(seen)) {
      if (performance.now() > deadline) throw new Error(`Desktop Commander round trip: no R${v} in ${JSON.stringify(seen.slice(-300))}`);
      const r = await srv.call('read_process_output', { pid, timeout_ms: 5000 });
      seen += '\n' + textOf(r);
    }
  };
  return {
    flows: [
      {
        name: 'interact_with_process (waits for the prompt)',
        async trip(v) {
          const r = await srv.call('interact_with_process', { pid, input: `echo R$((${v}))` });
          await readUntil(v, textOf(r));
        },
      },
      {
        name: 'interact_with_process (no wait) + read_process_output',
        async trip(v) {
          await srv.call('interact_with_process', { pid, input: `echo R$((${v}))`, wait_for_prompt: false });
          await readUntil(v, '');
        },
      },
    ],
  };
}

// The bulk producer: `bytes` bytes of output, then a marker line.
// The shape agents produce (issue 29): 100-byte lines, the last one unended, then a marker.
const bulkCommand = (bytes) => `head -c ${bytes} /dev/zero | tr '\\0' a | fold -w 100; echo; echo BULK-DONE`;

// The floors: the same producer read by a plain program as fast as it can, under a
// terminal (a PTY from python3's pty module, as a terminal emulator would read it) or on a
// pipe; the reader times itself from just before the spawn to the end of the output.
const floorScript = String.raw`
import json, os, pty, subprocess, sys, time
shape, cmd = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if shape == 'pty':
    m, s = pty.openpty()
    p = subprocess.Popen(['bash', '-c', cmd], stdin=s, stdout=s, stderr=s, start_new_session=True)
    os.close(s)
    fd = m
else:
    p = subprocess.Popen(['bash', '-c', cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    fd = p.stdout.fileno()
n, tail = 0, b''
while True:
    try:
        b = os.read(fd, 65536)
    except OSError:  # EIO: the terminal's last holder has gone
        break
    if not b:
        break
    n += len(b)
    tail = (tail + b)[-64:]
p.wait()
ms = (time.perf_counter() - t0) * 1000
# VmHWM, not getrusage's maxrss: that one keeps the peak of the memory the process had
# before its exec, which is a copy of its parent's (here node's).
with open('/proc/self/status') as f:
    hwm = int(f.read().split('VmHWM:')[1].split()[0])
print(json.dumps({'ms': ms, 'bytes': n, 'lostTail': b'BULK-DONE' not in tail, 'peakKiB': hwm}))
`;

async function floor(shape, bytes) {
  const { code, out, err } = await capture('python3', ['-c', floorScript, shape, bulkCommand(bytes)], { env: { PATH: serverPath() } });
  if (code !== 0) throw new Error(`${shape} floor exited ${code}: ${err.slice(-500)}`);
  return JSON.parse(out);
}

// runBulk measures the bulk output each way, `reps` times, the order rotating:
//   pty:  mcp-harness's shell session (shell_open, shell_io until the program exited)
//         against the PTY floor;
//   pipe: Desktop Commander's start_process (its programs run on pipes) against the pipe
//         floor, and mcp-harness's own way without a terminal: a task, whose output goes
//         to its log file, followed with tasks_status (waitMs, then the default 2 KB tail).
// For a server: time from the call that starts the program to the answer that shows it
// ended with its last line, and the server's peak RSS (VmHWM) afterwards; for a floor:
// its own time and peak RSS (VmHWM).
async function runBulk({ specs, bytes, reps }) {
  const ways = {};
  for (const spec of specs) {
    if (spec.kind === 'harness') {
      ways[`pty/${spec.name}`] = () => withServer(spec, (srv) => bulkSession(srv, bytes));
      ways[`pipe/${spec.name} task`] = () => withServer(spec, (srv) => bulkTask(srv, bytes));
    } else {
      ways[`pipe/${spec.name}`] = () => withServer(spec, (srv) => bulkDesktopCommander(srv, bytes));
    }
  }
  ways['pty/floor'] = () => floor('pty', bytes);
  ways['pipe/floor'] = () => floor('pipe', bytes);
  const names = Object.keys(ways);
  const res = await interleave(ways, reps);
  const out = { bytes, reps, command: bulkCommand(bytes), shapes: { pty: {}, pipe: {} } };
  for (const n of names) {
    const [shape, who] = n.split('/');
    const xs = res[n];
    out.shapes[shape][who] = {
      ms: spread(xs.map((x) => x.ms)),
      peakKiB: spread(xs.map((x) => x.peakKiB)),
      ...(xs[0].textBytes != null ? { textBytes: median(xs.map((x) => x.textBytes)) } : {}),
      lostTail: xs.filter((x) => x.lostTail).length,
    };
    log(`bulk ${bytes} B ${n}: ${out.shapes[shape][who].ms.median.toFixed(0)} ms, peak RSS ${out.shapes[shape][who].peakKiB.median} KiB`);
  }
  return out;
}

// withServer starts a fresh server, times fn (its own timing starts after the start-up)
// and reads the server's peak RSS.
async function withServer(spec, fn) {
  const srv = await start(spec);
  try {
    const t0 = performance.now();
    const r = await fn(srv);
    const ms = performance.now() - t0;
    return { ms, peakKiB: memory(srv.pid).hwm, ...r };
  } finally {
    await srv.close();
  }
}

// counting wraps srv.call to count the bytes of text the answers carried (what lands in
// the model's context).
function counting(srv) {
  const c = { textBytes: 0 };
  c.call = async (name, args) => {
    const r = await srv.call(name, args);
    c.textBytes += Buffer.byteLength(textOf(r));
    return r;
  };
  return c;
}

async function bulkSession(srv, bytes) {
  const c = counting(srv);
  const deadline = performance.now() + 300_000;
  let r = await c.call('shell_open', { command: bulkCommand(bytes), timeoutMs: 30_000 });
  const id = r.structuredContent.sessionId;
  let seen = r.structuredContent.output;
  while (!r.structuredContent.exited) {
    if (performance.now() > deadline) throw new Error('mcp-harness bulk: the program did not finish');
    r = await c.call('shell_io', { sessionId: id, timeoutMs: 30_000 });
    seen = r.structuredContent.output;
  }
  if (!/BULK-DONE/.test(seen)) {
    // The marker came in an earlier read than the exit: read the end again.
    r = await c.call('shell_io', { sessionId: id, since: Math.max(0, r.structuredContent.cursor - 200), timeoutMs: 0 });
    seen = r.structuredContent.output;
  }
  await srv.call('shell_close', { sessionId: id });
  return { textBytes: c.textBytes, lostTail: !/BULK-DONE/.test(seen) };
}

async function bulkTask(srv, bytes) {
  const c = counting(srv);
  const run = await c.call('tasks_run', { name: 'bulk', tasks: [{ id: 'bulk', command: bulkCommand(bytes) }] });
  const graphId = run.structuredContent.graphId;
  let st;
  do {
    st = (await c.call('tasks_status', { graphId, waitMs: 30_000 })).structuredContent;
  } while (st.status === 'running');
  if (st.status !== 'succeeded') throw new Error(`mcp-harness bulk task: ${st.status}`);
  return { textBytes: c.textBytes, lostTail: !/BULK-DONE/.test(st.tasks[0].log?.text || '') };
}

async function bulkDesktopCommander(srv, bytes) {
  const c = counting(srv);
  const deadline = performance.now() + 300_000;
  // start_process answers when the program exits (or at its timeout) with the output.
  const res = await c.call('start_process', { command: bulkCommand(bytes), shell: '/bin/bash', timeout_ms: 300_000 });
  const pid = Number((textOf(res).match(/PID (\d+)/) || [])[1]);
  if (!pid) throw new Error(`Desktop Commander bulk start_process: ${textOf(res).slice(0, 300)}`);
  for (;;) {
    const t = textOf(await c.call('read_process_output', { pid, offset: -3, length: 3 }));
    // Desktop Commander keeps what a finished program printed as of its exit event, which
    // can come before the last of the pipe has been read: the end may then be missing.
    if (/Process completed/i.test(t)) return { textBytes: c.textBytes, lostTail: !/BULK-DONE/.test(t) };
    if (performance.now() > deadline) throw new Error(`Desktop Commander bulk: ${t.slice(-300)}`);
    await sleep(50);
  }
}

// Run on its own: node bench/terminal.mjs <mcp-harness binary> [--quick]
if (import.meta.url === `file://${process.argv[1]}`) {
  const { desktopCommanderEntry } = await import('./lib/mcp.mjs');
  const res = await runTerminal({ bin: process.argv[2], dc: desktopCommanderEntry(), quick: process.argv.includes('--quick') });
  fs.writeSync(1, JSON.stringify(res, null, 2) + '\n');
}
