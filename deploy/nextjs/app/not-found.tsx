import type { Metadata } from "next";
import Link from "next/link";

export const metadata: Metadata = { title: "Page not found" };

export default function NotFound() {
  return (
    <article className="page prose">
      <h1>Page not found</h1>
      <p>There is no page at this address. The chat in the corner can search this site for you.</p>
      <p>
        <Link href="/">Go to the home page</Link> or <Link href="/search">search the site</Link>
      </p>
    </article>
  );
}
