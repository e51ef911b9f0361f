// app/mcp/server-card/route.ts: the MCP server card (SEP-2127: the MCP endpoint followed
// by /server-card), which sitetools renders from its tool registry.
import { sitetoolsRoute } from "@/lib/sitetools";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export const { GET, HEAD, OPTIONS } = sitetoolsRoute;
