//! [`Pick`] and [`Picker`]: which target the next request goes to.
//!
//! A picker draws indexes into a space of `size` targets: the entries of a target list, or
//! the ids `0..N` of a URL template such as `http://host/obj/{id}` with `--objects N`. The
//! index of a run's request number `k` is a function of the seed and `k` alone, so the
//! stream is reproducible and the same however the run is split (threads, workers, shards).

use barrage_metrics::Intent;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal, Zipf};
use std::str::FromStr;

/// How the next target is chosen.
#[derive(Clone, Debug, PartialEq)]
pub enum Pick {
    /// Always the first target.
    Same,
    /// In order, wrapping around; clients interleave so that together they are exact.
    RoundRobin,
    /// Uniformly at random.
    Random,
    /// By popularity: rank r (from 1) is drawn with probability ∝ 1 / r^s.
    Zipf(f64),
    /// memtier's Gaussian key pattern (`--key-pattern G`): ids around `median` with spread
    /// `stddev`, in id units; draws outside the id space are drawn again. `None` takes
    /// memtier's defaults (`--key-median`, `--key-stddev`): the middle of the space, and a
    /// sixth of its size.
    Gaussian { stddev: Option<f64>, median: Option<f64> },
}

impl FromStr for Pick {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "invalid --pick '{s}': expected same, round-robin, random, zipf:EXPONENT (e.g. zipf:1.0) \
                 or gauss[:STDDEV[:MEDIAN]] (e.g. gauss:1000:5000)"
            )
        };
        match s {
            "same" => Ok(Pick::Same),
            "round-robin" | "rr" => Ok(Pick::RoundRobin),
            "random" => Ok(Pick::Random),
            _ if s.starts_with("zipf:") => {
                let exp: f64 = s["zipf:".len()..].parse().map_err(|_| bad())?;
                if exp.is_finite() && exp > 0.0 {
                    Ok(Pick::Zipf(exp))
                } else {
                    Err(bad())
                }
            }
            _ => parse_gaussian(s).ok_or_else(bad),
        }
    }
}

/// `gauss`, `gauss:STDDEV` or `gauss:STDDEV:MEDIAN`; an empty STDDEV before a median
/// (`gauss::MEDIAN`) keeps the default spread. The stddev must be positive, the median not
/// negative; whether the median lies among the ids is checked by [`crate::Plan::validate`],
/// which knows them.
fn parse_gaussian(s: &str) -> Option<Pick> {
    let mut parts = s.split(':');
    if parts.next()? != "gauss" || s.ends_with(':') {
        return None;
    }
    let number = |text: Option<&str>, ok: fn(f64) -> bool| -> Option<Option<f64>> {
        match text {
            None | Some("") => Some(None),
            Some(t) => t.parse().ok().filter(|v: &f64| v.is_finite() && ok(*v)).map(Some),
        }
    };
    let stddev = number(parts.next(), |v| v > 0.0)?;
    let median = number(parts.next(), |v| v >= 0.0)?;
    parts.next().is_none().then_some(Pick::Gaussian { stddev, median })
}

impl Pick {
    /// A Gaussian pick's (stddev, median) over ids `0..size`, memtier's defaults filled in:
    /// the ids span the real interval [0, size), so the middle is size / 2 and the spread a
    /// sixth of size (memtier's `(max − min) / 6` over its inclusive range, to one id).
    fn gaussian_over(stddev: Option<f64>, median: Option<f64>, size: u64) -> (f64, f64) {
        let size = size as f64;
        (stddev.unwrap_or(size / 6.0), median.unwrap_or(size / 2.0))
    }

    /// Why this pick cannot draw from ids `0..size`, if it cannot: a Gaussian whose median
    /// lies outside them, or whose spread is so wide that almost every draw would be
    /// redrawn (it would be `random`, slowly).
    pub fn check_space(&self, size: u64) -> Result<(), String> {
        let Pick::Gaussian { stddev, median } = *self else { return Ok(()) };
        if size == 0 {
            return Ok(()); // no targets: refused for that by the plan
        }
        let (sd, m) = Pick::gaussian_over(stddev, median, size);
        if m >= size as f64 {
            return Err(format!("--pick gauss: the median {m} lies outside the ids 0..{size}"));
        }
        if sd > size as f64 {
            return Err(format!(
                "--pick gauss: a stddev of {sd} is wider than the {size} ids; use --pick random for a flat spread"
            ));
        }
        Ok(())
    }
}

/// SplitMix64's output function: a well-mixed 64-bit value of `x`.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seed mixed with a place (a run's index in its study, a case's and repeat's number):
/// the seeds of a study's runs, so that they draw different request streams.
pub fn derive_seed(seed: u64, place: &[u64]) -> u64 {
    place.iter().fold(splitmix64(seed), |acc, p| splitmix64(acc ^ p.wrapping_add(1)))
}

/// A hit-ratio repeat looks back at most this many requests for the one it repeats (fewer
/// with `--objects`, which bounds the objects that repeat): the Wisconsin Proxy Benchmark's
/// history, here over the run's request numbers.
const HISTORY: u64 = 1 << 16;

/// Bits of a stream's request position in a new object's number: a run may ask for 2^36
/// new objects (19 hours at a million a second) before its positions wrap.
const POSITION_BITS: u32 = 36;

/// The most runs of one study that draw new objects of their own: a stream's index takes
/// the bits above a position and its part.
pub const MAX_STREAMS: u64 = 1 << (63 - POSITION_BITS);

/// Which stream of its study a run draws (the study's seed is the plan's), and which part
/// of it.
///
/// New objects are new **within a study by construction**: the number of a new object is a
/// bijection of (the seed; the run's `index`, its part, the request's position), so two
/// runs of one study (levels, probes, cases, repeats, warm-ups, background loads, each with
/// its own `index`) never ask for the same new object, and the shards of one run (which
/// share its index) ask for the unsplit run's. Another `--seed` gives other numbers; the
/// same seed asks for the same objects again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stream {
    /// The run's place in its study, below [`MAX_STREAMS`] (0 for a lone run): no two runs
    /// of a study share it but the phases of one stream (a fill and its measures).
    pub index: u64,
    /// The whole stream, or one of its phases.
    pub part: Part,
}

/// A part of a stream: `--phases fill,measure` splits it in two.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Part {
    /// The stream as it goes: with `--hit-ratio`, each request a repeat or a new object.
    #[default]
    Whole,
    /// The objects a measure will ask for, each asked for once: with `--hit-ratio` every
    /// request is a new object (the Wisconsin Proxy Benchmark's first phase), without it the
    /// pick's stream, whose first `warmed` requests the measure replays.
    Fill,
    /// What the fill's first `warmed` requests warmed: with `--hit-ratio` the stream goes on
    /// after the fill, its repeats reaching back into what the fill asked for (the
    /// benchmark's second phase); without it, request k asks for the fill's request
    /// k mod `warmed`, a hit every time.
    Measure {
        /// Requests of the fill that were all sent: 0, 1, … warmed − 1.
        warmed: u64,
    },
}

impl Stream {
    /// The seed of this run's draws: the study's `seed` for a lone run, mixed with its
    /// index in a study.
    pub fn seed(&self, seed: u64) -> u64 {
        if self.index == 0 {
            seed
        } else {
            derive_seed(seed, &[self.index])
        }
    }

    /// The number of the new object at `position` of this stream (its fill's positions when
    /// `fill`): a bijection of (index, part, position) under the study's seed.
    fn new_object(&self, study: u64, position: u64, fill: bool) -> u64 {
        let measure = u64::from(matches!(self.part, Part::Measure { .. }) && !fill);
        let place =
            (self.index << (POSITION_BITS + 1)) | (measure << POSITION_BITS) | (position & ((1 << POSITION_BITS) - 1));
        // SplitMix64's output function is a bijection of u64, and so is adding a key: two
        // places of one study never share a number, and the numbers look random.
        splitmix64(splitmix64(study).wrapping_add(place))
    }
}

/// Steps a hit-ratio repeat may take back through earlier repeats to the new request it
/// repeats (1 / (1 − ratio) on average: 10 at 0.9); past this the request it stands on is
/// taken as new, so a ratio a hair under 1 cannot cost a long walk per request.
const MAX_CHAIN: u32 = 4_096;

/// Draws of a Gaussian pick before the last one is clamped into the space. With a checked
/// plan one draw in three or more lands, so 1,000 misses in a row never happen.
const GAUSS_TRIES: u32 = 1_000;

/// The purpose of a random pick's hash ([`Picker::hash`]).
const RANDOM: u64 = 2;

/// Which target request number `k` of a run goes to, and what it was meant to meet in a
/// cache: a pure function of the seed, the stream and `k`.
///
/// Nothing depends on which thread, worker, shard or machine sends request `k`, nor on
/// what was sent before: the N shards of a split run (`--shard i/N`, each sending the
/// requests k ≡ i mod N) together send the unsplit run's stream, request for request, and
/// a cache study keeps its repeats when it is split.
#[derive(Clone, Debug)]
pub struct Picker {
    pick: Pick,
    size: u64,
    seed: u64,
    zipf: Option<Zipf<f64>>,
    gaussian: Option<Normal<f64>>,
    /// `--hit-ratio`: the fraction of requests that repeat an earlier one's target.
    hit_ratio: Option<f64>,
    /// Where its new objects come from, and which part of its stream the run is.
    stream: Stream,
    /// The study's seed: its new objects' key.
    study: u64,
    /// A repeat looks back at least this many requests of its lane: the lane's clients. A
    /// request nearer than that may still be in flight, its object not yet in any cache, and
    /// a repeat of it would miss by no fault of the cache (the benchmark's clients each
    /// repeat their own earlier, finished, requests).
    gap: u64,
    /// And at most this many more ([`HISTORY`], or `--objects`).
    window: u64,
    /// A repeat looks back along its own lane: requests `stride` apart. An open loop's
    /// requests go in the order of their numbers, whichever thread sends them (1); a closed
    /// loop's threads each take the numbers of their lane at their own pace, so a number
    /// below a request's on another lane may not have been sent yet.
    stride: u64,
}

impl Picker {
    /// The picker of a run's plan: its pick over its targets or ids, its hit ratio, its
    /// stream, and its load's clients as the repeats' gap.
    pub fn of(plan: &crate::Plan) -> Picker {
        let mut p = Picker::new(&plan.pick, plan.pick_space(), plan.draw_seed(), plan.hit_ratio);
        (p.stream, p.study) = (plan.stream, plan.seed);
        p.gap = plan.clients();
        p.window = plan.objects.unwrap_or(HISTORY).clamp(1, HISTORY);
        p
    }

    /// The same picker for a closed loop whose request numbers are dealt to `lanes` lanes
    /// (threads × shards), each sent in order at its own pace: a repeat looks back along its
    /// own lane, past that lane's share of the clients.
    pub fn in_lanes(mut self, lanes: u64) -> Picker {
        let lanes = lanes.max(1);
        self.gap = self.gap.div_ceil(lanes).max(1);
        self.window = (self.window / lanes).max(1);
        self.stride = lanes;
        self
    }

    /// The picker of a lone run over `size` targets, its repeats one request apart. With
    /// `hit_ratio`, the stream follows the Wisconsin Proxy Benchmark instead of `pick`.
    pub fn new(pick: &Pick, size: u64, seed: u64, hit_ratio: Option<f64>) -> Picker {
        let size = size.max(1);
        let zipf = match pick {
            Pick::Zipf(s) => Some(Zipf::new(size, *s).expect("size ≥ 1 and a positive exponent")),
            _ => None,
        };
        let gaussian = match *pick {
            Pick::Gaussian { stddev, median } => {
                let (sd, m) = Pick::gaussian_over(stddev, median, size);
                Some(Normal::new(m, sd).expect("a finite, non-negative stddev"))
            }
            _ => None,
        };
        Picker {
            pick: pick.clone(),
            size,
            seed,
            zipf,
            gaussian,
            hit_ratio,
            stream: Stream::default(),
            study: seed,
            gap: 1,
            window: HISTORY,
            stride: 1,
        }
    }

    /// The same picker as run `stream` of the study seeded `study` (its draws then seeded
    /// for the run), its repeats at least `gap` requests back.
    pub fn in_stream(mut self, study: u64, stream: Stream, gap: u64) -> Picker {
        self.seed = stream.seed(study);
        (self.stream, self.study) = (stream, study);
        self.gap = gap.max(1);
        self
    }

    /// The target index (or object number) of request `k`.
    pub fn at(&self, k: u64) -> u64 {
        self.draw(k).0
    }

    /// The target index (or object number) of request `k`, and what it was meant to meet
    /// in a cache. With `--hit-ratio` a number is a new object's or one asked for before,
    /// anywhere in `u64`; otherwise it is in `0..size`.
    pub fn draw(&self, k: u64) -> (u64, Intent) {
        match (self.hit_ratio, self.stream.part) {
            (Some(_), Part::Fill) => (self.stream.new_object(self.study, k, true), Intent::New),
            (Some(ratio), _) => self.wisconsin(ratio, k),
            (None, Part::Measure { warmed }) => (self.pick_at(k % warmed.max(1)), Intent::Repeat),
            (None, _) => (self.pick_at(k), Intent::Any),
        }
    }

    /// The pick's draw for request `k`, in `0..size`.
    fn pick_at(&self, k: u64) -> u64 {
        match self.pick {
            Pick::Same => 0,
            Pick::RoundRobin => k % self.size,
            // One hash and one multiply: a generator seeded per draw (four rounds of
            // SplitMix64 and a rejection loop) was 5% of a pipelined GET's CPU. The
            // multiply maps 2^64 hashes onto `size` ids, each within 1 of 2^64 / size of them.
            // Its own purpose: purpose 0's hash is also what a key-value command's value
            // size is drawn from, and the two must not move together.
            Pick::Random => ((self.hash(k, RANDOM) as u128 * self.size as u128) >> 64) as u64,
            Pick::Zipf(_) => {
                let rank = self.zipf.as_ref().expect("set for zipf").sample(&mut self.rng(k, 0));
                (rank as u64).clamp(1, self.size) - 1
            }
            Pick::Gaussian { .. } => self.gaussian_index(k),
        }
    }

    /// A generator for request `k`'s draws, one stream per `purpose` (0: the pick's draw,
    /// 1: the Wisconsin stream's, [`RANDOM`]: a random pick's).
    fn rng(&self, k: u64, purpose: u64) -> SmallRng {
        SmallRng::seed_from_u64(self.hash(k, purpose))
    }

    /// Request `k`'s random 64 bits for `purpose`.
    fn hash(&self, k: u64, purpose: u64) -> u64 {
        splitmix64(self.seed ^ splitmix64(k ^ purpose.rotate_right(8)))
    }

    /// The Wisconsin Proxy Benchmark's stream: request `k` repeats with probability `ratio`
    /// the object of one of the requests of its lane at least [`Picker::gap`] and at most the
    /// window before it, chosen uniformly; otherwise it asks for a new object (its
    /// position's). A repeat of a repeat is followed back to the new request it stands on,
    /// so every repeat asks for an object requested well before it: a hit once cached.
    ///
    /// A measure's requests stand after its fill's `warmed` ones, which were all new: a
    /// repeat that reaches back into them asks for what the fill warmed. Requests nearer
    /// the start than the gap have nothing finished to repeat and are new.
    fn wisconsin(&self, ratio: f64, k: u64) -> (u64, Intent) {
        let before = match self.stream.part {
            Part::Measure { warmed } => warmed,
            _ => 0,
        };
        let mut at = before + k;
        let mut intent = Intent::New;
        for _ in 0..MAX_CHAIN {
            if at < before {
                return (self.stream.new_object(self.study, at, true), intent);
            }
            let mut rng = self.rng(at - before, 1);
            let (gap, stride) = (self.gap, self.stride);
            if at < gap * stride || !(ratio >= 1.0 || rng.gen_bool(ratio)) {
                break;
            }
            let reach = ((at - gap * stride) / stride + 1).min(self.window);
            at -= (gap + rng.gen_range(0..reach)) * stride;
            intent = Intent::Repeat;
        }
        if at < before {
            return (self.stream.new_object(self.study, at, true), intent);
        }
        (self.stream.new_object(self.study, at - before, false), intent)
    }

    /// Request `k`'s normal draw over the real interval [0, size), redrawn while it falls
    /// outside (as memtier does), cut down to its id. [`Pick::check_space`] keeps the median
    /// inside and the spread at most the space, so at least a third of draws land; a plan
    /// that was not checked gets its last draw clamped after [`GAUSS_TRIES`] instead of a
    /// hung thread.
    fn gaussian_index(&self, k: u64) -> u64 {
        let normal = self.gaussian.as_ref().expect("set for gauss");
        let mut rng = self.rng(k, 0);
        let end = self.size as f64;
        let mut x = 0.0;
        for _ in 0..GAUSS_TRIES {
            x = normal.sample(&mut rng);
            if (0.0..end).contains(&x) {
                break;
            }
        }
        // `as` floors and saturates (a negative draw is 0); `min` also guards a space too
        // large for f64 to hold exactly.
        (x as u64).min(self.size - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn parses() {
        assert_eq!("same".parse::<Pick>().unwrap(), Pick::Same);
        assert_eq!("round-robin".parse::<Pick>().unwrap(), Pick::RoundRobin);
        assert_eq!("zipf:0.8".parse::<Pick>().unwrap(), Pick::Zipf(0.8));
        let gauss = |stddev, median| Pick::Gaussian { stddev, median };
        assert_eq!("gauss".parse::<Pick>().unwrap(), gauss(None, None));
        assert_eq!("gauss:250".parse::<Pick>().unwrap(), gauss(Some(250.0), None));
        assert_eq!("gauss:2.5:100".parse::<Pick>().unwrap(), gauss(Some(2.5), Some(100.0)));
        assert_eq!("gauss::0".parse::<Pick>().unwrap(), gauss(None, Some(0.0)));
        for bad in [
            "zipf",
            "zipf:0",
            "zipf:x",
            "often",
            "gauss:",
            "gauss:0",
            "gauss:-1",
            "gauss:x",
            "gauss:1:-1",
            "gauss:1:inf",
            "gauss:NaN",
            "gauss:1:2:3",
            "gaussian",
            "gauss1",
        ] {
            let err = bad.parse::<Pick>().unwrap_err();
            assert!(err.contains(&format!("'{bad}'")) && err.contains("gauss[:STDDEV[:MEDIAN]]"), "{bad}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }

    /// Mean and standard deviation of `n` Gaussian draws over `size` ids; every id in range.
    fn gaussian_moments(pick: &Pick, size: u64, seed: u64, n: usize) -> (f64, f64) {
        let p = Picker::new(pick, size, seed, None);
        let ids: Vec<u64> = (0..n as u64).map(|k| p.at(k)).collect();
        assert!(ids.iter().all(|i| *i < size), "{pick:?} over {size} left the space");
        let mean = ids.iter().map(|i| *i as f64).sum::<f64>() / n as f64;
        let var = ids.iter().map(|i| (*i as f64 - mean).powi(2)).sum::<f64>() / n as f64;
        (mean, var.sqrt())
    }

    /// Far from the edges the draws are the asked normal: over 100,000 draws the sample mean
    /// is within 1 % of the stddev of the median (about 3 standard errors) and the sample
    /// stddev within 1 % of the asked one. The id is the floor of the real draw, so the mean
    /// sits half an id below the median.
    #[test]
    fn gaussian_draws_have_the_asked_median_and_stddev() {
        for (size, sd, m) in [(1_000_000u64, 10_000.0, 300_000.0), (10_000, 500.0, 5_000.0), (100_000, 50.0, 300.0)] {
            let pick = Pick::Gaussian { stddev: Some(sd), median: Some(m) };
            let (mean, stddev) = gaussian_moments(&pick, size, 9, 100_000);
            assert!((mean + 0.5 - m).abs() < 0.01 * sd, "{pick:?}: mean {mean}");
            assert!((stddev / sd - 1.0).abs() < 0.01, "{pick:?}: stddev {stddev}");
        }
    }

    /// memtier's defaults: the middle of the space, a sixth of it as spread. Cut at ±3σ the
    /// normal's stddev shrinks to 0.9866σ; the sample's must be that, not the uncut σ.
    #[test]
    fn gaussian_defaults_are_memtiers() {
        let size = 600_000;
        let (mean, stddev) = gaussian_moments(&Pick::Gaussian { stddev: None, median: None }, size, 4, 100_000);
        assert!((mean - 300_000.0).abs() < 1_000.0, "mean {mean}");
        let truncated = 100_000.0 * 0.9866;
        assert!((stddev / truncated - 1.0).abs() < 0.01, "stddev {stddev}, want {truncated}");
    }

    /// A median at the edge: half the mass falls outside and is redrawn, never clamped onto
    /// id 0 (a clamp would put about half the draws there).
    #[test]
    fn gaussian_redraws_what_falls_outside() {
        let p = Picker::new(&Pick::Gaussian { stddev: Some(100.0), median: Some(0.0) }, 1_000, 2, None);
        let ids: Vec<u64> = (0..100_000).map(|k| p.at(k)).collect();
        assert!(ids.iter().all(|i| *i < 1_000));
        let zeros = ids.iter().filter(|i| **i == 0).count();
        // P(0 ≤ X < 1 | X ≥ 0) for σ = 100 is about 0.008: 800 of 100,000.
        assert!((500..1_100).contains(&zeros), "{zeros} draws of id 0");
        let q = Picker::new(&Pick::Gaussian { stddev: Some(0.2), median: Some(0.5) }, 1, 2, None);
        assert!((0..1_000).all(|k| q.at(k) == 0), "a one-id space");
        // An unchecked plan whose median lies far outside: clamped, not hung.
        let r = Picker::new(&Pick::Gaussian { stddev: Some(1.0), median: Some(1e9) }, 10, 2, None);
        assert_eq!(r.at(0), 9);
    }

    #[test]
    fn gaussian_is_seeded() {
        let pick = Pick::Gaussian { stddev: None, median: None };
        let draw = |seed| {
            let p = Picker::new(&pick, 1_000_000, seed, None);
            (0..100).map(|k| p.at(k)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }

    #[test]
    fn gaussian_space_is_checked() {
        let gauss = |stddev, median| Pick::Gaussian { stddev, median };
        assert!(gauss(None, None).check_space(1).is_ok());
        assert!(gauss(Some(100.0), Some(99.0)).check_space(100).is_ok());
        let err = gauss(None, Some(100.0)).check_space(100).unwrap_err();
        assert_eq!(err, "--pick gauss: the median 100 lies outside the ids 0..100");
        let err = gauss(Some(101.0), None).check_space(100).unwrap_err();
        assert!(err.starts_with("--pick gauss: a stddev of 101 is wider than the 100 ids"), "{err}");
        assert!(Pick::Zipf(1.0).check_space(1).is_ok());
    }

    #[test]
    fn round_robin_visits_every_target_in_turn() {
        let p = Picker::new(&Pick::RoundRobin, 3, 1, None);
        assert_eq!((0..7).map(|k| p.at(k)).collect::<Vec<_>>(), vec![0, 1, 2, 0, 1, 2, 0]);
    }

    /// Request k's target depends on the seed and k alone: drawn in any order, by any
    /// number of clients (threads, workers, shards), the stream is the same.
    #[test]
    fn the_stream_is_a_function_of_the_request_number() {
        for (pick, ratio) in [
            (Pick::Random, None),
            (Pick::Zipf(1.0), None),
            (Pick::Gaussian { stddev: None, median: None }, None),
            (Pick::RoundRobin, None),
            (Pick::Random, Some(0.7)),
        ] {
            let p = Picker::new(&pick, 100_000, 11, ratio);
            let forward: Vec<u64> = (0..3_000).map(|k| p.at(k)).collect();
            let again = Picker::new(&pick, 100_000, 11, ratio);
            // Three shards, each k ≡ i mod 3, the last backwards.
            let mut split = vec![0; 3_000];
            for i in 0..3u64 {
                let ks: Vec<u64> = (0..3_000).filter(|k| k % 3 == i).collect();
                let ks: Vec<u64> = if i == 2 { ks.into_iter().rev().collect() } else { ks };
                for k in ks {
                    split[k as usize] = again.at(k);
                }
            }
            assert_eq!(forward, split, "{pick:?} {ratio:?}");
        }
    }

    #[test]
    fn same_and_random_stay_in_range_and_are_seeded() {
        let s = Picker::new(&Pick::Same, 9, 1, None);
        assert!((0..100).all(|k| s.at(k) == 0));
        let draw = |seed| {
            let p = Picker::new(&Pick::Random, 10, seed, None);
            (0..50).map(|k| p.at(k)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        assert!(draw(7).iter().all(|i| *i < 10));
    }

    /// Random draws are uniform: 100,000 over 10 ids put 10,000 on each, give or take
    /// 5 standard deviations (√(100,000 × 0.1 × 0.9) ≈ 95), and a space of 3 ids
    /// with a size that is no power of two reaches each id as often.
    #[test]
    fn random_draws_are_uniform() {
        for (size, n) in [(10u64, 100_000u64), (3, 30_000)] {
            let p = Picker::new(&Pick::Random, size, 42, None);
            let mut counts = vec![0u64; size as usize];
            for k in 0..n {
                counts[p.at(k) as usize] += 1;
            }
            let expect = n / size;
            let sd = ((n as f64) * (1.0 / size as f64) * (1.0 - 1.0 / size as f64)).sqrt();
            for c in &counts {
                assert!((*c as f64 - expect as f64).abs() < 5.0 * sd, "{size}: {counts:?}");
            }
        }
    }

    /// The fitted slope of log(frequency) against log(rank) over the popular ranks is the
    /// exponent.
    #[test]
    fn zipf_ranks_follow_the_exponent() {
        for s in [0.8, 1.0, 1.2] {
            let p = Picker::new(&Pick::Zipf(s), 1000, 42, None);
            let mut counts = vec![0u64; 1000];
            for k in 0..200_000 {
                counts[p.at(k) as usize] += 1;
            }
            let points: Vec<(f64, f64)> = (0..20).map(|r| (((r + 1) as f64).ln(), (counts[r] as f64).ln())).collect();
            let n = points.len() as f64;
            let (mx, my) = (points.iter().map(|p| p.0).sum::<f64>() / n, points.iter().map(|p| p.1).sum::<f64>() / n);
            let slope = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>()
                / points.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>();
            assert!((slope + s).abs() < 0.08, "exponent {s}: fitted {}", -slope);
        }
    }

    /// New objects depend on the seed: two seeds never ask for the same new object, one seed
    /// asks for the same ones again (phases replay on purpose).
    #[test]
    fn new_targets_depend_on_the_seed() {
        let new = |seed: u64| -> HashSet<u64> {
            let p = Picker::new(&Pick::Random, 1 << 40, seed, Some(0.0));
            (0..5_000).map(|k| p.at(k)).collect()
        };
        assert_eq!(new(5).len(), 5_000, "every request of a 0 % hit ratio is new");
        assert!(new(5).is_disjoint(&new(6)), "--seed 5 then --seed 6 meet new objects");
        assert_eq!(new(5), new(5));
        let (a, b) = (derive_seed(1, &[0]), derive_seed(1, &[1]));
        assert!(a != b && a != 1 && derive_seed(1, &[0, 1]) != derive_seed(1, &[1, 0]));
    }

    /// A study's runs: every index a study gives (here 6 cases × 5 repeats × 2 roles, the
    /// svLoad experiment's sixty runs, plus each one's warm-up) in every part, each run with
    /// its own derived seed as the studies give them: no new object is asked for by two
    /// runs, whatever the hit ratio, and within a run each new object once.
    #[test]
    fn no_two_runs_of_a_study_ask_for_the_same_new_object() {
        let mut seen: std::collections::HashMap<u64, (u64, &str)> = Default::default();
        for index in 1..=120u64 {
            for (part, ratio) in
                [(Part::Whole, 0.0), (Part::Whole, 0.5), (Part::Fill, 0.5), (Part::Measure { warmed: 700 }, 0.5)]
            {
                let stream = Stream { index, part };
                let p = Picker::new(&Pick::Random, 100_000, 7, Some(ratio)).in_stream(7, stream, 16);
                let mut own = HashSet::new();
                for k in 0..1_500 {
                    let (id, intent) = p.draw(k);
                    let fill_object = matches!(part, Part::Measure { .. }) && intent == Intent::Repeat;
                    if intent != Intent::New || fill_object {
                        continue;
                    }
                    assert!(own.insert(id), "index {index} {part:?}: request {k} asks for {id} anew twice");
                    let label = if matches!(part, Part::Fill) { "fill" } else { "run" };
                    if let Some(other) = seen.insert(id, (index, label)) {
                        // The fill and the measure of one stream share what the fill asked for
                        // only through repeats, which are skipped above; a whole run and a
                        // fill of one index are two studies' shapes, never one study's.
                        assert!(other.0 == index, "new object {id} of run {index} was run {}'s", other.0);
                    }
                }
            }
        }
        assert!(seen.len() > 250_000, "{} new objects", seen.len());
    }

    /// `--phases fill,measure` with a hit ratio: the fill asks for new objects only; the
    /// measure's repeats ask for what the fill asked for (or the measure before them), its
    /// new requests for objects neither asked for, and it repeats the asked fraction.
    #[test]
    fn a_measure_repeats_what_its_fill_asked_for_and_its_new_objects_are_new() {
        let stream = |part| Stream { index: 4, part };
        let fill = Picker::new(&Pick::Random, 1000, 9, Some(0.5)).in_stream(9, stream(Part::Fill), 8);
        let warmed = 2_000;
        let filled: HashSet<u64> =
            (0..warmed).map(|k| fill.draw(k)).inspect(|d| assert_eq!(d.1, Intent::New)).map(|d| d.0).collect();
        assert_eq!(filled.len() as u64, warmed, "a fill asks for each object once");
        let measure = Picker::new(&Pick::Random, 1000, 9, Some(0.5)).in_stream(9, stream(Part::Measure { warmed }), 8);
        let mut asked = filled.clone();
        let mut repeats = 0;
        for k in 0..20_000 {
            let (id, intent) = measure.draw(k);
            match intent {
                Intent::Repeat => {
                    assert!(asked.contains(&id), "request {k} repeats {id}, never asked for");
                    repeats += 1;
                }
                _ => assert!(asked.insert(id), "request {k}'s new object {id} was asked for before"),
            }
        }
        let share = f64::from(repeats) / 20_000.0;
        assert!((share - 0.5).abs() < 0.02, "repeated {share}");
        // Without a hit ratio, a measure replays the fill: request k is the fill's k mod warmed.
        let fill = Picker::new(&Pick::Random, 1000, 9, None).in_stream(9, stream(Part::Fill), 8);
        let measure = Picker::new(&Pick::Random, 1000, 9, None).in_stream(9, stream(Part::Measure { warmed: 50 }), 8);
        for k in 0..200 {
            assert_eq!(measure.draw(k), (fill.at(k % 50), Intent::Repeat), "request {k}");
        }
        assert_eq!(fill.draw(3).1, Intent::Any, "a fill without a hit ratio means nothing of its own");
    }

    /// A repeat never asks for any of the `gap` requests before it (they may be in flight);
    /// the first `gap` requests have nothing finished to repeat and are new.
    #[test]
    fn a_repeat_looks_back_past_the_clients_in_flight() {
        let gap = 32;
        let p = Picker::new(&Pick::Random, 1 << 40, 5, Some(0.9)).in_stream(5, Stream::default(), gap);
        let ids: Vec<(u64, Intent)> = (0..5_000).map(|k| p.draw(k)).collect();
        assert!(ids[..gap as usize].iter().all(|d| d.1 == Intent::New));
        let first: std::collections::HashMap<u64, usize> =
            ids.iter().enumerate().rev().map(|(k, d)| (d.0, k)).collect();
        for (k, (id, intent)) in ids.iter().enumerate() {
            if *intent == Intent::Repeat {
                assert!(first[id] + gap as usize <= k, "request {k} repeats request {}'s object", first[id]);
            }
        }
        let repeats = ids.iter().filter(|d| d.1 == Intent::Repeat).count();
        assert!((4_300..4_600).contains(&repeats), "{repeats} repeats of 5,000 at 0.9 after the first 32");
    }

    /// Over 20,000 requests the fraction asking for a target requested before is the hit
    /// ratio ± 2 %, and a repeat looks back no further than the history.
    #[test]
    fn hit_ratio_stream_repeats_the_asked_fraction() {
        for ratio in [0.0, 0.3, 0.5, 0.9, 0.99] {
            let mut seen = HashSet::new();
            let p = Picker::new(&Pick::Random, 1 << 40, 3, Some(ratio));
            let repeats = (0..20_000).filter(|k| !seen.insert(p.at(*k))).count();
            let measured = repeats as f64 / 20_000.0;
            assert!((measured - ratio).abs() <= 0.02, "asked {ratio}, measured {measured}");
        }
        // Every request repeats the first.
        let p = Picker::new(&Pick::Random, 1 << 40, 3, Some(1.0));
        assert!((0..1_000).all(|k| p.at(k) == p.at(0)));
        // Far into a run, repeats still find recent objects: within the history of k, chains
        // included (64 steps of a whole history at most, in practice).
        let p = Picker::new(&Pick::Random, 1 << 40, 3, Some(0.9));
        let back: std::collections::HashMap<u64, u64> =
            (5_000_000 - 64 * HISTORY..5_000_200).map(|k| (p.at(k), k)).collect();
        for k in 5_000_000..5_000_200 {
            assert!(back.contains_key(&p.at(k)), "request {k} repeats an object from further back");
        }
    }
}
