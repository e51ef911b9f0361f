// The bench's peer for /mcp: the minimal stateless MCP server a site owner would write
// with the official TypeScript SDK, serving the tool definitions it is given.
//
//   node server.mjs CATALOG_JSON PORT
//
// CATALOG_JSON is a file holding the `tools` array of sitetools' own tools/list answer,
// exported by the bench, so that both servers list exactly the same definitions. It
// follows the SDK's stateless example (examples/server/simpleStatelessStreamableHttp):
// createMcpExpressApp (DNS-rebinding protection, JSON body parser), and per request a
// new server and a StreamableHTTPServerTransport with sessionIdGenerator undefined (a
// stateless transport cannot be reused across requests), here with JSON responses
// instead of an SSE stream. The low-level Server is used because the tools come as JSON
// Schema: McpServer.registerTool takes zod schemas.
import { readFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [catalogPath, port] = process.argv.slice(2);
if (!catalogPath || !port) {
  console.error('usage: node server.mjs CATALOG_JSON PORT');
  process.exit(2);
}
const tools = JSON.parse(readFileSync(catalogPath, 'utf8'));

function getServer() {
  const server = new Server({ name: 'sitetools-peer', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
  // The bench compares tools/list only; a call says so rather than pretend.
  server.setRequestHandler(CallToolRequestSchema, (req) => ({
    isError: true,
    content: [{ type: 'text', text: `${req.params.name}: the bench peer lists tools but does not run them` }],
  }));
  return server;
}

const app = createMcpExpressApp();
app.post('/mcp', async (req, res) => {
  const server = getServer();
  try {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  } catch (error) {
    console.error('error handling an MCP request:', error);
    if (!res.headersSent) {
      res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null });
    }
  }
});
const notAllowed = (req, res) => {
  res.writeHead(405).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null }));
};
app.get('/mcp', notAllowed);
app.delete('/mcp', notAllowed);

app.listen(Number(port), '127.0.0.1', (error) => {
  if (error) {
    console.error('listen:', error);
    process.exit(1);
  }
  // The bench waits for this line.
  console.log(`listening on 127.0.0.1:${port}`);
});
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
