//! The benchmark protocols on the GPU under criterion: env-steps per second of a `Batch` of
//! Super Mario Bros. from World 1-1, frameskip 4, as `protocol_a/<envs>`, `protocol_b/<envs>`
//! and `protocol_b_gray84/<envs>`. Each iteration puts every env back in its state after the
//! protocol's 30 warm-up steps (untimed) and times the next 25 (`NESLE_BENCH_STEPS`), so every
//! sample times the same work; env counts from `NESLE_BENCH_ENVS` (default 4096,65536). What
//! is timed and how to read it: README.md beside this file.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use nes_cuda::picture::GRAY_PIXELS;
use nes_cuda::{Batch, BatchConfig, CudaSlice, Error, FlatState, RomImage};
use std::time::{Duration, Instant};

// What nes-core's examples share: the ROM lookup, World 1-1's start and the action generator.
#[path = "../../nes-core/examples/common/rng.rs"]
mod rng;
#[path = "../../nes-core/examples/common/smb.rs"]
mod smb;
use rng::{Rng, SIMPLE_MOVEMENT};

const FRAMESKIP: u32 = 4;
const WARMUP_STEPS: usize = 30;
const RIGHT: u8 = 0x80;

#[derive(Clone, Copy, PartialEq)]
enum Protocol {
    A,
    B,
    BGray84,
}

impl Protocol {
    fn group(self) -> &'static str {
        match self {
            Protocol::A => "protocol_a",
            Protocol::B => "protocol_b",
            Protocol::BGray84 => "protocol_b_gray84",
        }
    }
}

/// A protocol's batch; after its warm-up, ready to be put back there before each iteration.
struct Run {
    protocol: Protocol,
    batch: Batch,
    /// Each env's generator (as the warm-up left it, once warmed up).
    rngs: Vec<Rng>,
    actions: Vec<u8>,
    gray: Option<CudaSlice<u8>>,
    everyone: Vec<u8>,
    warmed_up: bool,
}

impl Run {
    /// The batch, made here so that a GPU too small for it skips the benchmark; the warm-up
    /// waits for the first iteration, so a benchmark that criterion's filter leaves out
    /// costs nothing more.
    fn new(protocol: Protocol, rom: RomImage, start: &FlatState, n: usize) -> Result<Run, Error> {
        let pixels = protocol == Protocol::BGray84;
        let batch = Batch::with_state(rom, n, BatchConfig { pixels, ..BatchConfig::default() }, start)?;
        let gray = if pixels { Some(batch.alloc(n * GRAY_PIXELS)?) } else { None };
        let (rngs, actions, everyone) = ((0..n).map(Rng::for_env).collect(), vec![RIGHT; n], vec![1; n]);
        Ok(Run { protocol, batch, rngs, actions, gray, everyone, warmed_up: false })
    }

    /// The protocol's warm-up steps, whose states become the bank every iteration starts from.
    fn warm_up(&mut self) -> Result<(), Error> {
        self.steps(WARMUP_STEPS)?;
        let warmed = self.batch.states_to_host()?;
        self.batch.set_bank(&warmed)?;
        self.warmed_up = true;
        Ok(())
    }

    /// `k` steps of the protocol, each waited for.
    fn steps(&mut self, k: usize) -> Result<(), Error> {
        for _ in 0..k {
            if self.protocol != Protocol::A {
                for (act, rng) in self.actions.iter_mut().zip(&mut self.rngs) {
                    *act = SIMPLE_MOVEMENT[(rng.next() % 7) as usize];
                }
            }
            match self.gray.as_mut() {
                Some(g) => self.batch.step_gray84(&self.actions, FRAMESKIP, g)?,
                None => self.batch.step(&self.actions, FRAMESKIP)?,
            }
            self.batch.synchronize()?;
        }
        Ok(())
    }

    /// Times `iters` runs of `k` steps, each from the states after the warm-up.
    fn time(&mut self, iters: u64, k: usize) -> Result<Duration, Error> {
        if !self.warmed_up {
            self.warm_up()?;
        }
        let rngs: Vec<u32> = self.rngs.iter().map(|r| r.0).collect();
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            // Env i takes bank state i: its own state after the warm-up. (Only the warps' grouping
            // for the first step follows the last step run; the results do not depend on it.)
            self.batch.reset_masked(&self.everyone, None)?;
            self.batch.synchronize()?;
            let t = Instant::now();
            self.steps(k)?;
            total += t.elapsed();
            for (r, &s) in self.rngs.iter_mut().zip(&rngs) {
                r.0 = s;
            }
        }
        Ok(total)
    }
}

/// `NESLE_BENCH_ENVS`, or 4,096 and 65,536 envs.
fn env_counts() -> Vec<usize> {
    match std::env::var("NESLE_BENCH_ENVS") {
        Ok(v) => v
            .split(',')
            .map(|s| match s.trim().parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => panic!("NESLE_BENCH_ENVS={v}: env counts of at least 1, comma-separated"),
            })
            .collect(),
        Err(_) => vec![4096, 65536],
    }
}

/// `NESLE_BENCH_STEPS`, or 25.
fn timed_steps() -> usize {
    match std::env::var("NESLE_BENCH_STEPS") {
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => panic!("NESLE_BENCH_STEPS={v}: a step count of at least 1"),
        },
        Err(_) => 25,
    }
}

fn protocols(c: &mut Criterion) {
    let rom = std::fs::read(smb::rom_path("super-mario-bros.nes"))
        .expect("super-mario-bros.nes: run `python3 -m nesle roms fetch smb` or set NESLE_ROM_DIR");
    // One env first: a machine without a GPU, or a build without kernels, stops here.
    if let Err(e) = Batch::new(&rom, 1, BatchConfig::default()) {
        println!("nes-cuda benches: nothing timed: {e}");
        return;
    }
    let (start, _) = smb::world_1_1_of(&rom).unwrap_or_else(|e| panic!("{e}"));
    let start = start.to_flat();
    let image = RomImage::new(&rom).expect("the ROM loaded above");
    let k = timed_steps();
    for protocol in [Protocol::A, Protocol::B, Protocol::BGray84] {
        let mut g = c.benchmark_group(protocol.group());
        // An iteration is k whole steps of thousands of envs: few, equal samples.
        g.sampling_mode(SamplingMode::Flat).sample_size(10).warm_up_time(Duration::from_secs(1));
        g.measurement_time(Duration::from_secs(20));
        for &n in &env_counts() {
            let mut run = match Run::new(protocol, image.clone(), &start, n) {
                Ok(run) => run,
                Err(e @ Error::OutOfMemory { .. }) => {
                    println!("{}/{n}: skipped: {e}", protocol.group());
                    continue;
                }
                Err(e) => panic!("{}/{n}: {e}", protocol.group()),
            };
            g.throughput(Throughput::Elements((n * k) as u64));
            g.bench_function(BenchmarkId::from_parameter(n), |b| {
                b.iter_custom(|iters| run.time(iters, k).unwrap_or_else(|e| panic!("{}/{n}: {e}", protocol.group())))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, protocols);
criterion_main!(benches);
