/**
 * npm's `prepare` step (after `npm install` in a clone, before `npm pack`): builds dist/ with
 * TypeScript. Without TypeScript (an install that left out the dev packages) there is nothing to
 * build with: a dist/ already built is kept (exit 0); with none, this says how to make a production
 * install and fails (exit 1), since the package cannot run without dist/.
 */
const { execSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');

function hasTypeScript() {
  try {
    require.resolve('typescript/package.json', { paths: [root] });
    return true;
  } catch (error) {
    if (error.code === 'MODULE_NOT_FOUND') return false;
    throw error;
  }
}

if (hasTypeScript()) {
  try {
    execSync('npm run build', { cwd: root, stdio: 'inherit' });
  } catch (error) {
    // tsc has printed what is wrong; a stack trace of this script would add nothing.
    if (typeof error.status !== 'number') throw error;
    process.exitCode = error.status;
  }
} else if (existsSync(join(root, 'dist', 'server.js'))) {
  console.error('prepare: TypeScript is not installed; keeping the dist/ already built');
} else {
  console.error(
    'prepare: TypeScript is not installed, so dist/ cannot be built. For a production install run: npm ci && npm prune --omit=dev',
  );
  process.exitCode = 1;
}
