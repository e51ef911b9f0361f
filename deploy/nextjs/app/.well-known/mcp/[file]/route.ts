// app/.well-known/mcp/[file]/route.ts: the MCP server card at the earlier drafts'
// well-known path (/.well-known/mcp/server-card.json), served by sitetools.
import { sitetoolsRoute } from "@/lib/sitetools";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export const { GET, HEAD, OPTIONS } = sitetoolsRoute;
