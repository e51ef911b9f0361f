"use client";

// Lets the chat widget navigate with Next's router, so that the document, the widget and
// its relay connection stay. Links in answers and the relay's open_page dispatch a
// cancelable CustomEvent("sitetools:navigate", {detail: {url, done: null}}) on document;
// this takes it and sets done to a promise of {status, url, title}, resolved once the new
// page is shown (or after 5 s regardless). Mounted once, in the root layout.
import { usePathname, useRouter } from "next/navigation";
import { useEffect, useRef } from "react";
import { pagePath } from "./markdown";

const TIMEOUT_MS = 5000;

export default function SitetoolsRouter() {
  const router = useRouter();
  const pathname = usePathname();
  const waiting = useRef<{ path: string; shown: () => void }[]>([]);

  // Runs once React has committed the page at pathname: it is in the document.
  useEffect(() => {
    for (const w of waiting.current.filter((w) => w.path === pathname)) w.shown();
    waiting.current = waiting.current.filter((w) => w.path !== pathname);
  }, [pathname]);

  useEffect(() => {
    async function navigate(target: URL) {
      const href = pagePath(target);
      const path = new URL(href, location.href).pathname;
      const deadline = Date.now() + TIMEOUT_MS;
      // Next answers 404 for a path that is no page.
      const status = await fetch(href, { method: "HEAD", signal: AbortSignal.timeout(TIMEOUT_MS) }).then(
        (res) => res.status,
        () => 0,
      );
      const samePage = path === location.pathname; // pathname will not change
      const title = document.title;
      const shown = samePage
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiting.current.push({ path, shown: resolve }));
      router.push(href);
      await Promise.race([shown, wait(deadline - Date.now())]);
      // React may commit the new page a moment before Next updates the address bar.
      while (location.pathname !== path && Date.now() < deadline) await wait(16);
      if (!samePage) await titleChange(title, Math.min(1000, deadline - Date.now()));
      return { status, url: location.pathname + location.search + location.hash, title: document.title };
    }

    function onNavigate(e: Event) {
      const detail = (e as CustomEvent<{ url?: unknown; done?: unknown }>).detail;
      if (typeof detail?.url !== "string") return;
      let target: URL;
      try {
        target = new URL(detail.url, location.href);
      } catch {
        return;
      }
      // Not a page of this site ("//host" as a path would name another host).
      if (target.origin !== location.origin || target.pathname.startsWith("//")) return;
      e.preventDefault();
      detail.done = navigate(target);
    }

    document.addEventListener("sitetools:navigate", onNavigate);
    return () => document.removeEventListener("sitetools:navigate", onNavigate);
  }, [router]);

  return null;
}

function wait(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

// titleChange resolves when Next has set the new page's <title>, a moment after its
// content, or after ms (a page with the same title).
function titleChange(before: string, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const changed = () => document.title !== "" && document.title !== before;
    const done = () => {
      observer.disconnect();
      clearTimeout(timer);
      resolve();
    };
    const observer = new MutationObserver(() => changed() && done());
    observer.observe(document.head, { subtree: true, childList: true, characterData: true });
    const timer = setTimeout(done, ms);
    if (changed()) done();
  });
}
