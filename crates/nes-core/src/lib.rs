//! nes-core: a cycle-accurate NES (Ricoh 2A03 CPU, 2C02 PPU, APU timing, mappers 0/1/2/3/4/7/66)
//! in `no_std` Rust.
//!
//! It is nesle's CPU reference: the CUDA kernels must agree with it bit for bit, and the CPU
//! backend runs it directly. The module tree follows the console's block diagram: [`cpu`],
//! [`ppu`], [`apu`], [`bus`] (the CPU address space and clock), [`cart`] and [`mapper`] (the
//! cartridge), [`controller`], and [`console`] which wires them together.
//!
//! ```no_run
//! let rom = std::fs::read("super-mario-bros.nes").unwrap();
//! let mut nes = nes_core::Console::new(&rom).unwrap();
//! nes.set_buttons(0, nes_core::controller::START);
//! nes.run_frame();
//! let world = nes.ram()[0x075f];
//! # let _ = world;
//! ```
#![cfg_attr(not(any(test, feature = "std")), no_std)]

#[cfg(feature = "alloc")]
extern crate alloc;

pub mod apu;
pub mod bus;
pub mod cart;
pub mod console;
pub mod controller;
pub mod cpu;
pub mod flat;
pub mod mapper;
pub mod palette;
pub mod ppu;
pub mod state;
#[cfg(feature = "std")]
pub mod testrom;

pub use cart::{Cart, Mirroring, RomError};
pub use console::Console;
pub use cpu::Fault;
pub use state::StateError;
