//! The frame loop's guard: a console in an impossible state (here a PPU scanline that does not
//! exist, so vertical blank never comes) halts with `Fault::Stalled` instead of spinning forever.
//! The CUDA kernel has the same guard, so a corrupted env cannot hang a whole launch.

use nes_core::{Console, Fault};

mod common;

#[test]
fn a_frame_that_never_reaches_vblank_halts_the_console_with_a_stalled_fault() {
    let mut nes = Console::new(&common::tiny_rom(0, 2, 1)).unwrap();
    nes.run_frame();
    assert_eq!(nes.fault(), None);
    nes.bus.ppu.scanline = 400;
    nes.run_frame();
    assert!(matches!(nes.fault(), Some(Fault::Stalled { .. })), "got {:?}", nes.fault());
    let cycles = nes.cycles();
    nes.run_frame();
    assert!(nes.cycles() > cycles, "a halted console still lets time pass, and returns");
}
