import type { ComponentChildren } from 'preact';

// Every console page: the same head (our stylesheet, htmx and the console's own script, all served
// from this process — the page loads nothing from elsewhere, and the Content-Security-Policy says
// so), the same navigation, and a live part that htmx asks for again every two seconds.

/** htmx's settings: no inline style of its own, no eval, no script from a swapped response (the CSP forbids them all). */
const HTMX_CONFIG = JSON.stringify({ includeIndicatorStyles: false, allowEval: false, allowScriptTags: false, historyCacheSize: 0 });

/** How often a page's live part is asked for again. */
export const LIVE_EVERY = '2s';

export const Layout = ({ title, children }: { title: string; children: ComponentChildren }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="htmx-config" content={HTMX_CONFIG} />
      <title>{title}</title>
      <link rel="icon" href="/assets/favicon.svg" type="image/svg+xml" />
      <link rel="stylesheet" href="/assets/console.css" />
      <script src="/assets/htmx.min.js" defer></script>
      <script src="/assets/console.js" defer></script>
    </head>
    <body>
      <nav>
        <a href="/" class="brand">the mesh</a>
        <a href="/catalogue">catalogue</a>
        <a href="/projections">projections</a>
        <a href="/log">log</a>
        <span class="muted">read-only: commands are signed, with <code>npx mesh</code></span>
      </nav>
      <p id="stale" class="stale" hidden></p>
      {children}
    </body>
  </html>
);

/**
 * The part of a page that stays live: htmx asks for `url` again every two seconds and swaps in the
 * same part of the answer. A link followed or a filter changed loads a new page as ever.
 */
export const Live = ({ url, children }: { url: string; children: ComponentChildren }) => (
  <div id="live" hx-get={url} hx-trigger={`every ${LIVE_EVERY}`} hx-select="#live" hx-swap="outerHTML">
    {children}
  </div>
);
