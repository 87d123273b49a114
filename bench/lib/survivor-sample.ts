/**
 * Preloaded into a server under study (`bench/profile.ts --node-args "--import ./bench/lib/survivor-sample.ts"`):
 * the first SIGWINCH starts V8's sampling heap profiler keeping only what no minor collection freed
 * (what was promoted, or is still live); the second writes the profile to
 * $SURVIVOR_SAMPLE_FILE (a `.heapprofile` DevTools opens). Allocation stacks of survivors, which a
 * heap snapshot (live objects only, after a full collection) cannot show.
 */
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';

const session = new Session();
session.connect();
let sampling = false;

process.on('SIGWINCH', () => {
  if (!sampling) {
    sampling = true;
    session.post('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: false,
    });
    return;
  }
  session.post('HeapProfiler.stopSampling', (error, result) => {
    if (error) throw error;
    writeFileSync(process.env.SURVIVOR_SAMPLE_FILE ?? '/tmp/survivors.heapprofile', JSON.stringify(result.profile));
  });
});
