//! Single-thread frames per second of nes-core on Super Mario Bros. World 1-1 gameplay.
//!
//! Each iteration starts from a clone of the console at the first playable frame of World 1-1
//! (the clone is set-up, not timed) and runs `CHUNK` frames of scripted play: running right
//! with B held, jumping every 40 frames. Three variants:
//!
//! - `no_pixels`: pixel output off (`set_render(false)`), what a RAM-observation agent needs;
//! - `pixels`: the 256x240 palette-index picture written every frame;
//! - `pixels_rgb`: that, plus `palette::indices_to_rgb` into a 184,320-byte RGB frame every
//!   frame (what an RGB observation costs when every frame is observed).
//!
//! Criterion prints "thrpt" in elements/s; one element is one NES frame. See README.md.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use nes_core::controller::{A, B, RIGHT, START};
use nes_core::Console;
use std::hint::black_box;
use std::time::Duration;

#[path = "../tests/common/mod.rs"]
mod common;
use common::game_rom as rom;

/// Frames per timed iteration: two seconds of game time, long enough that cloning the console
/// for the next iteration (untimed anyway) is noise.
const CHUNK: u32 = 120;

/// Power-on to the first frame where World 1-1 is playable (OperMode 1, task 3).
fn world_1_1() -> Console {
    let mut nes = Console::new(&rom("super-mario-bros.nes")).expect("SMB loads");
    for f in 0..600 {
        let ram = nes.ram();
        if ram[0x0770] == 1 && ram[0x0772] == 3 {
            return nes;
        }
        // Tap Start on the title screen until the game begins.
        let title = ram[0x0770] == 0 && ram[0x0772] == 3;
        nes.set_buttons(0, if title && f % 10 < 5 { START } else { 0 });
        nes.run_frame();
    }
    panic!("SMB did not reach World 1-1 in 600 frames");
}

fn buttons(f: u32) -> u8 {
    if f % 40 < 15 {
        RIGHT | B | A
    } else {
        RIGHT | B
    }
}

fn frames(c: &mut Criterion) {
    let start = world_1_1();
    let mut g = c.benchmark_group("smb_1_1");
    g.throughput(Throughput::Elements(CHUNK as u64));
    // 2 shared cores: short, repeatable runs beat long ones.
    g.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));

    let setup = |render: bool| {
        let mut nes = start.clone();
        nes.set_render(render);
        nes
    };
    g.bench_function("no_pixels", |b| {
        b.iter_batched_ref(
            || setup(false),
            |nes| {
                for f in 0..CHUNK {
                    nes.set_buttons(0, buttons(f));
                    nes.run_frame();
                }
                black_box(nes.ram()[0x0086])
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("pixels", |b| {
        b.iter_batched_ref(
            || setup(true),
            |nes| {
                for f in 0..CHUNK {
                    nes.set_buttons(0, buttons(f));
                    nes.run_frame();
                    black_box(nes.pixels());
                }
            },
            BatchSize::SmallInput,
        )
    });
    let mut rgb = vec![0u8; 256 * 240 * 3];
    g.bench_function("pixels_rgb", |b| {
        b.iter_batched_ref(
            || setup(true),
            |nes| {
                for f in 0..CHUNK {
                    nes.set_buttons(0, buttons(f));
                    nes.run_frame();
                    nes_core::palette::indices_to_rgb(nes.pixels(), &mut rgb);
                    black_box(&rgb);
                }
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, frames);
criterion_main!(benches);
