'use strict';
// A plugin whose decisions are wrong on purpose, for the test that the host
// refuses them: each filter's config names the exact bytes its decider
// sends back as the decision's JSON.
const { serve } = require('../plugin.js');

serve({
  name: 'bad-decisions',
  version: '0.0.0',
  policy: {
    schema: {
      type: 'object',
      properties: { answer: { type: 'string' } },
      required: ['answer'],
      additionalProperties: false,
    },
    newPolicy: (config) => () => config.answer,
  },
});
