// `npm run conformance`: the suites written elsewhere (test/conformance/README.md), apart from `npm test`
export default {
  files: ['dist/test/conformance/**/*.test.js'],
  timeout: '120s',
  workerThreads: false,
};
