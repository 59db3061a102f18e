// k6 script driven by -e CASE/URL/DUR/CONNS/RATE/SUMMARY_OUT (see tools.d/k6.sh).
// CASE rate and rate20k are open model (constant-arrival-rate at RATE), the others closed.
import http from 'k6/http';

const CASE = __ENV.CASE;
const CONNS = parseInt(__ENV.CONNS, 10);
const DUR = `${__ENV.DUR}s`;

const scenario = CASE.startsWith('rate')
  ? { executor: 'constant-arrival-rate', rate: parseInt(__ENV.RATE, 10), timeUnit: '1s',
      duration: DUR, preAllocatedVUs: CONNS, maxVUs: CONNS * 4, gracefulStop: '5s' }
  : { executor: 'constant-vus', vus: CONNS, duration: DUR, gracefulStop: '5s' };

export const options = {
  scenarios: { main: scenario },
  discardResponseBodies: true,
  noConnectionReuse: CASE === 'noka',
  insecureSkipTLSVerify: CASE === 'tls',
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(99)'],
};

const URL = __ENV.URL;
export default function () { http.get(URL); }

export function handleSummary(data) {
  return { [__ENV.SUMMARY_OUT]: JSON.stringify(data) };
}
