// The official TypeScript SDK's client (StreamableHTTPClientTransport) against
// `mcp-harness http` in token mode: run drives it with MCP_URL and MCP_TOKEN set. The
// SDK's Client checks every tool result's structuredContent against the outputSchema
// tools/list gave (callTool throws on a mismatch), so each call here is also a schema check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = new URL(process.env.MCP_URL);
const token = process.env.MCP_TOKEN;

async function connect(headers = { Authorization: `Bearer ${token}` }) {
  const client = new Client({ name: 'ts-sdk-e2e', version: '1' });
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  await client.connect(transport);
  return { client, transport };
}

test('no token, or a wrong one: 401 with a Bearer challenge, and nothing served', async () => {
  for (const headers of [{}, { Authorization: 'Bearer not-the-token-of-this-server' }]) {
    await assert.rejects(connect(headers), (err) => {
      assert.ok(err instanceof StreamableHTTPError, String(err));
      assert.equal(err.code, 401);
      return true;
    });
  }
  const resp = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  assert.equal(resp.status, 401);
  assert.match(resp.headers.get('www-authenticate') ?? '', /^Bearer/);
});

test('a session: tools, a terminal with progress, a task graph, then DELETE', async () => {
  const { client, transport } = await connect();
  assert.ok(transport.sessionId, 'initialize gave an Mcp-Session-Id');
  assert.equal(client.getServerVersion().name, 'mcp-harness');

  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(),
    ['shell_close', 'shell_io', 'shell_list', 'shell_open', 'tasks_cancel', 'tasks_graph', 'tasks_list', 'tasks_run', 'tasks_status']);

  const opened = await client.callTool({ name: 'shell_open', arguments: { command: 'sh' } });
  assert.ok(!opened.isError, JSON.stringify(opened));
  const sessionId = opened.structuredContent.sessionId;
  assert.match(sessionId, /^s\d+-[a-z2-7]{26}$/, 'an unguessable session id');

  const progress = [];
  const io = await client.callTool(
    { name: 'shell_io', arguments: { sessionId, input: 'sleep 1.5; echo OUT_$((40+2))\n', waitFor: '(?m)^OUT_42', timeoutMs: 20000 } },
    undefined,
    { onprogress: (p) => progress.push(p), timeout: 60000 },
  );
  assert.ok(!io.isError, JSON.stringify(io));
  assert.equal(io.structuredContent.reason, 'matched');
  assert.ok(progress.length >= 1, 'progress came on the request\'s stream while it waited');

  const run = await client.callTool({ name: 'tasks_run', arguments: { tasks: [{ id: 'a', command: 'echo A' }, { id: 'b', command: 'echo B', dependsOn: ['a'] }] } });
  assert.ok(!run.isError, JSON.stringify(run));
  const status = await client.callTool({ name: 'tasks_status', arguments: { graphId: run.structuredContent.graphId, waitMs: 20000 } });
  assert.equal(status.structuredContent.status, 'succeeded', JSON.stringify(status.structuredContent));

  const list = await client.callTool({ name: 'shell_list', arguments: {} });
  assert.deepEqual(list.structuredContent.sessions.map((s) => s.sessionId), [sessionId]);
  const closed = await client.callTool({ name: 'shell_close', arguments: { sessionId } });
  assert.ok(!closed.isError, JSON.stringify(closed));

  // Quick calls side by side on one session.
  const many = await Promise.all(Array.from({ length: 20 }, () => client.callTool({ name: 'tasks_list', arguments: {} })));
  assert.ok(many.every((r) => !r.isError));

  const id = transport.sessionId;
  await transport.terminateSession();
  await client.close();
  const after = await fetch(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': id, 'MCP-Protocol-Version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
  });
  assert.equal(after.status, 404, 'a deleted session is gone');
});

test('a cancelled call ends its wait at once', async () => {
  const { client } = await connect();
  const opened = await client.callTool({ name: 'shell_open', arguments: { command: 'sh' } });
  const sessionId = opened.structuredContent.sessionId;
  const ac = new AbortController();
  const started = Date.now();
  const call = client.callTool({ name: 'shell_io', arguments: { sessionId, waitFor: 'never-printed', timeoutMs: 25000 } }, undefined, { signal: ac.signal });
  setTimeout(() => ac.abort(), 300);
  await assert.rejects(call, (err) => {
    assert.match(String(err), /abort/i);
    return true;
  });
  // The session answers at once: the cancelled wait holds nothing.
  const quick = await client.callTool({ name: 'shell_io', arguments: { sessionId, timeoutMs: 0 } });
  assert.ok(!quick.isError, JSON.stringify(quick));
  assert.ok(Date.now() - started < 10000);
  await client.callTool({ name: 'shell_close', arguments: { sessionId } });
  await client.close();
});

test('a foreign Origin is 403', async () => {
  const resp = await fetch(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, Origin: 'https://evil.example', 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  assert.equal(resp.status, 403);
});
