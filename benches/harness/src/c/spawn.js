// execguard-bench node workload: spawn N children (/bin/true) one after the
// other with child_process.spawnSync, failing loudly on any non-zero status.
'use strict';
const { spawnSync } = require('child_process');
const n = Number(process.argv[2] || '10');
for (let i = 0; i < n; i++) {
  const r = spawnSync('/bin/true', [], { stdio: 'ignore' });
  if (r.error || r.status !== 0) {
    console.error(`node: child ${i} failed: ${r.error || 'status ' + r.status}`);
    process.exit(1);
  }
}
