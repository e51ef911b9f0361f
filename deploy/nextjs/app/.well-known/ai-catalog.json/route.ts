// app/.well-known/ai-catalog.json/route.ts: the site's AI catalog, which sitetools renders
// from its tool registry: where agents find the site's MCP server (/mcp/server-card).
import { sitetoolsRoute } from "@/lib/sitetools";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export const { GET, HEAD, OPTIONS } = sitetoolsRoute;
