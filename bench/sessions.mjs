// Many sessions at once (issue 29): the interactive round trip of bench/terminal.mjs (type
// `echo R<n>` into a bash session, shell_io with waitFor until R<n> comes back) on a server
// with one session, against the same on a server where 32 other sessions are busy: each
// runs a bash loop that prints a line every 10 ms (its wait is bash's own `read -t`, so no
// process is forked per line), the way builds, test runs and dev servers an agent left
// running keep printing. What the busy sessions cost the round trip is what the server
// spends on their output (terminal emulation, rings, waking readers), since their own CPU
// is small. The two ways alternate, each on a fresh server, round trips 50 ms apart.

import fs from 'node:fs';
import { start, harnessSpec, tempDir, removeDir, spread, log, sleep, textOf } from './lib/mcp.mjs';

const busyCommand = `exec bash --norc --noprofile -c 'exec 3<> <(:); i=0; while :; do echo "tick $i"; i=$((i+1)); read -t 0.01 -u 3; done'`;

async function trips(bin, busy, n, warm) {
  const ws = tempDir(`sessions-${busy}`);
  const srv = await start(harnessSpec(bin, ws, ['--max-sessions', String(busy + 4)]));
  try {
    for (let i = 0; i < busy; i++) {
      await srv.call('shell_open', { command: busyCommand, waitFor: 'tick 1\\b' });
    }
    const res = await srv.call('shell_open', { command: 'exec bash --norc --noprofile -i', env: { PS1: '$ ' }, waitFor: '\\$ $' });
    const id = res.structuredContent.sessionId;
    const ms = [];
    for (let k = 0; k < warm + n; k++) {
      const v = 1000 * (k + 1) + Math.floor(Math.random() * 1000);
      await sleep(50);
      const t0 = performance.now();
      const r = await srv.call('shell_io', { sessionId: id, input: `echo R$((${v}))\n`, waitFor: `(?m)^R${v}$` });
      const t = performance.now() - t0;
      if (r.structuredContent.reason !== 'matched') throw new Error(`round trip with ${busy} busy sessions: ${textOf(r).slice(0, 300)}`);
      if (k >= warm) ms.push(t);
    }
    return ms;
  } finally {
    await srv.close();
    removeDir(ws);
  }
}

export async function runSessions({ bin, quick }) {
  const busy = quick ? 4 : 32;
  const rounds = quick ? 1 : 3;
  const n = quick ? 5 : 30;
  const out = { busy, rounds, tripsPerRound: n, one: [], many: [] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? ['many', 'one'] : ['one', 'many'];
    for (const w of order) out[w].push(...(await trips(bin, w === 'one' ? 0 : busy, n, 3)));
  }
  out.oneMs = spread(out.one);
  out.manyMs = spread(out.many);
  log(`sessions: one ${out.oneMs.median.toFixed(2)} ms, with ${busy} busy ${out.manyMs.median.toFixed(2)} ms`);
  return out;
}

// Run on its own: node bench/sessions.mjs <mcp-harness binary> [--quick]
if (import.meta.url === `file://${process.argv[1]}`) {
  const res = await runSessions({ bin: process.argv[2], quick: process.argv.includes('--quick') });
  fs.writeSync(1, JSON.stringify({ busy: res.busy, oneMs: res.oneMs, manyMs: res.manyMs }, null, 2) + '\n');
}
