/**
 * The Content-Security-Policy of the service's own pages (the API reference, GraphiQL): they may
 * load from, and talk to, this origin only, so they work offline and a key typed into them goes
 * nowhere else. Styles may be inline (both inject them), workers may be blobs (GraphiQL's
 * editor); `inlineScripts` allows a page whose script is inline (GraphiQL's single page).
 */
export function selfOnlyContentSecurityPolicy(options: { inlineScripts?: boolean } = {}): string {
  return [
    "default-src 'none'",
    `script-src 'self'${options.inlineScripts ? " 'unsafe-inline'" : ''}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self' blob:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}
