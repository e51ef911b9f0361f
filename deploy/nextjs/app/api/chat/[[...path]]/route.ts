// app/api/chat/[[...path]]/route.ts: /api/chat (the chat stream) and /api/chat/tools
// (the tool catalog and calls) on the frontend's own origin, passed to sitetools. Copy
// app/ and lib/ into the Next.js project (`@/` is its root, as create-next-app sets it).
import { sitetoolsRoute } from "@/lib/sitetools";

// Never cached or prerendered; Node.js runtime for streamed request bodies.
export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export const { GET, HEAD, POST, OPTIONS } = sitetoolsRoute;
