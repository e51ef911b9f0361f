import type { Metadata } from "next";
import Link from "next/link";
import { connection } from "next/server";
import type { ReactNode } from "react";
import Nav from "./nav";
import SitetoolsRouter from "./sitetools-router";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "Northwind Lane", template: "%s · Northwind Lane" },
};

export default async function RootLayout({ children }: { children: ReactNode }) {
  // Every page renders per request: Next puts the nonce of proxy.ts's
  // Content-Security-Policy on its inline scripts only then.
  await connection();
  return (
    <html lang="en">
      <head>
        <meta name="sitetools:contact" content="/contact" />
        {/* The chat: it adds <sitetools-chat> to <body> by itself, outside React's tree. */}
        <script type="module" src="/webmcp/chat.js"></script>
        {/* The site search: defines <sitetools-search>, placed in the header (app/nav.tsx)
            and on /search. */}
        <script type="module" src="/webmcp/search.js"></script>
      </head>
      <body>
        <a className="skip-link" href="#main">
          Skip to content
        </a>
        <header className="site-header">
          <div className="wrap">
            <Link className="brand" href="/">
              Northwind Lane
            </Link>
            <Nav />
          </div>
        </header>
        <main id="main" tabIndex={-1}>
          <div className="wrap">{children}</div>
        </main>
        <footer className="site-footer">
          <div className="wrap">
            <Link href="/privacy">Privacy</Link>
            <Link href="/imprint">Imprint</Link>
          </div>
        </footer>
        <SitetoolsRouter />
      </body>
    </html>
  );
}
