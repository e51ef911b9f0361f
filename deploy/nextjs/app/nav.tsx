"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";

const links = [
  { href: "/", label: "Home" },
  { href: "/services", label: "Services" },
  { href: "/pricing", label: "Pricing" },
  { href: "/blog", label: "Blog" },
  { href: "/contact", label: "Contact" },
];

export default function Nav() {
  const pathname = usePathname();
  return (
    <>
      {/* The site search's button (Ctrl-K, ⌘-K or "/" opens it too); /webmcp/search.js,
          loaded in the layout, defines the element. Not on /search, whose own field then
          takes the shortcut. */}
      {pathname !== "/search" && (
        <div className="site-search">
          <sitetools-search modal />
        </div>
      )}
      <nav aria-label="Main">
        <ul className="nav-list">
          {links.map(({ href, label }) => {
            const current = href === "/" ? pathname === "/" : pathname === href || pathname.startsWith(href + "/");
            return (
              <li key={href}>
                <Link href={href} aria-current={current ? "page" : undefined}>
                  {label}
                </Link>
              </li>
            );
          })}
        </ul>
      </nav>
    </>
  );
}
