import test from 'ava';
import { LoginThrottle, webapiLimits } from '../../core/auth/throttle';
import { Defaults } from '../../core/defaults';

/**
 * The guessing rate the default [webapi] login_* settings allow one address:
 * a guesser that sends a new value whenever it would be checked, on the
 * throttle's own clock, second by second.
 */
function guesses(seconds: number, ip = '10.0.0.1'): number {
  let now = 0;
  const throttle = new LoginThrottle(webapiLimits(Defaults.webapi), () => now);
  let checked = 0;
  for (now = 0; now <= seconds * 1000; now += 1000) {
    // as many as it lets through this second
    while (throttle.locked(ip) === 0) throttle.failed(ip, `guess ${checked++}`);
  }
  return checked;
}

test('default settings: 13 guesses at once, 32 in the first hour, then 12 an hour (288 a day) per address', (t) => {
  t.is(guesses(0), 13, 'free failures (5) + login_pending_max (8)');
  t.is(guesses(3600), 32);
  const day = guesses(86_400);
  const second = guesses(2 * 86_400);
  t.is(second - day, 288, 'a day at the longest step (300 s)');
  t.log(`at once ${guesses(0)}, first hour ${guesses(3600)}, first day ${day}, each further day ${second - day}`);
});

test('a repeated wrong value never counts; another address has its own budget', (t) => {
  let now = 0;
  const throttle = new LoginThrottle(webapiLimits(Defaults.webapi), () => now);
  for (let i = 0; i < 10_000; i++) t.is(throttle.failed('10.0.0.1', 'stale'), 0);
  t.is(throttle.locked('10.0.0.1'), 0);
  for (let i = 0; i < 13; i++) throttle.failed('10.0.0.2', `g${i}`);
  t.true(throttle.locked('10.0.0.2') > 0);
  t.is(throttle.locked('10.0.0.1'), 0);
  now += 301_000 * 8;
  t.is(throttle.locked('10.0.0.2'), 0, 'the bookings came due');
});
