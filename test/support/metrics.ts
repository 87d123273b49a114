import type { TestService } from './harness.js';

/** The sum of the samples of `name` with these labels (all of its samples without any) in a `/metrics` scrape. */
export async function scrapedMetric(service: TestService, name: string, labels: Record<string, string> = {}): Promise<number> {
  const scraped = await service.request('/metrics', { headers: { authorization: `Bearer ${service.platformToken}` } });
  const wanted = Object.entries(labels).map(([label, value]) => `${label}="${value}"`);
  return scraped.text
    .split('\n')
    .filter((line) => (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) && wanted.every((pair) => line.includes(pair)))
    .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
}
