/* global document */
// The console's one script of its own. htmx keeps each page's live part fresh; when the control
// plane stops answering, what is shown would silently grow old. Absence is not health: say so
// over the page until it answers again.

let since = null;

const stale = (why) => {
  const banner = document.getElementById('stale');
  if (!banner) return;
  since = since ?? new Date();
  banner.textContent = `The control plane ${why} since ${since.toLocaleTimeString()}: what this page shows is from before then.`;
  banner.hidden = false;
};

document.addEventListener('htmx:sendError', () => stale('does not answer'));
document.addEventListener('htmx:responseError', (event) => stale(`answers ${event.detail.xhr.status}`));
document.addEventListener('htmx:afterSwap', () => {
  since = null;
  const banner = document.getElementById('stale');
  if (banner) banner.hidden = true;
});
