//! The console: a 2A03 CPU driving the [`Bus`] (RAM, PPU, APU, cartridge, controllers).
//!
//! A *frame* ends when the PPU enters vertical blank (scanline 241, dot 1): at that point the
//! picture is complete, and the NMI that games use to read input and run their logic is about
//! to fire. So `set_buttons` then `run_frame` gives the game exactly one frame of that input.

use crate::bus::Bus;
use crate::cart::Cart;
#[cfg(feature = "alloc")]
use crate::cart::RomError;
use crate::cpu::{Cpu, Fault, N, Z};
use crate::ppu::{HEIGHT, WIDTH};
use crate::state::{fnv1a, Snapshot, StateError, StateReader, StateWriter};

/// A frame is at most 29,781 CPU cycles, so fewer than 15,000 steps; a console that runs four
/// times that without reaching vertical blank can only be in an impossible state. The frame loop
/// (here and in the CUDA kernel) then halts it instead of spinning forever.
pub const MAX_STEPS_PER_FRAME: u32 = 60_000;

/// Bumped whenever the saved fields change; older states are refused.
pub const STATE_VERSION: u32 = 1;
const STATE_MAGIC: &[u8; 8] = b"NESLEST\0";
/// magic(8) + version(4) + body length(4) + ROM hash(8).
const HEADER_LEN: usize = 24;
const CHECKSUM_LEN: usize = 8;

/// One NES. The chips are public fields for inspection and for tests that build states no game
/// reaches; writing them is unchecked (a table index out of range panics, a clock near its end
/// overflows). To put a console in a state from outside, use [`Console::load_state`] or
/// `Console::from_flat`, which refuse any state a console cannot be in.
#[derive(Clone, Debug)]
pub struct Console {
    pub cpu: Cpu,
    pub bus: Bus,
    /// `run_frame` skips idle `JMP`-to-itself iterations in bulk (the result is identical; a
    /// switch so tests can compare). Not saved state.
    fast_forward: bool,
}

impl Console {
    /// Parses an iNES / NES 2.0 ROM and powers the console on.
    #[cfg(feature = "alloc")]
    pub fn new(rom: &[u8]) -> Result<Console, RomError> {
        Ok(Console::with_cart(Cart::from_ines(rom)?))
    }

    /// Powers on a console with this cartridge.
    pub fn with_cart(cart: Cart) -> Console {
        Console { cpu: Cpu::new(), bus: Bus::new(cart), fast_forward: true }
    }

    /// The reset button.
    pub fn reset(&mut self) {
        self.bus.catch_up_ppu();
        self.bus.catch_up_apu();
        self.cpu.reset();
        self.bus.ppu.reset();
        self.bus.apu.reset();
        self.bus.cart.reset();
        self.bus.after_reset();
    }

    /// Buttons held on pad 0 or 1: bit 0 A, 1 B, 2 Select, 3 Start, 4 Up, 5 Down, 6 Left, 7 Right.
    ///
    /// # Panics
    /// If `pad` is 2 or more: the NES has two pads, and a third would press another's buttons.
    pub fn set_buttons(&mut self, pad: usize, buttons: u8) {
        assert!(pad < 2, "the NES has pads 0 and 1, not {pad}");
        self.bus.pads.buttons[pad] = buttons;
    }

    /// Executes one instruction (or interrupt sequence).
    #[inline]
    pub fn step(&mut self) {
        self.bus.refresh_lines();
        self.cpu.unsettle();
        self.cpu.step(&mut self.bus);
        self.bus.catch_up_ppu();
        self.bus.catch_up_apu();
    }

    /// Runs until the PPU enters vertical blank, i.e. one whole frame. A console that cannot
    /// get there (see [`MAX_STEPS_PER_FRAME`]) is halted with [`Fault::Stalled`].
    ///
    /// Games wait for the NMI in a `JMP` to itself (SMB: a third of its cycles in play, see
    /// perf-notes #21): once an iteration of it leaves the CPU at rest, the following ones up
    /// to the next cycle where an interrupt line may change are skipped in bulk, each counted
    /// as a step. SMB's sprite-0 wait (`LDA $2002; AND #$40; BEQ`, ~30 lines a frame) is
    /// skipped the same way, up to the first read that could see a status bit change (#35).
    pub fn run_frame(&mut self) {
        self.bus.ppu.frame_complete = false;
        self.bus.refresh_lines();
        self.cpu.unsettle();
        let mut steps = 0u32;
        while !self.bus.ppu.frame_complete {
            let pc = self.cpu.pc;
            self.cpu.step(&mut self.bus);
            steps += 1;
            // 0: a `JMP` to itself; 5: a `BEQ`/`BNE` back to a `LDA $2002; AND #m` (one
            // test for both: 1 and 4 fall through in `skip_loop`).
            let back = pc.wrapping_sub(self.cpu.pc);
            if back & !5 == 0 && self.fast_forward && !self.bus.ppu.frame_complete {
                steps += self.skip_loop(back, MAX_STEPS_PER_FRAME.saturating_sub(steps));
            }
            if steps > MAX_STEPS_PER_FRAME {
                self.cpu.fault = Some(Fault::Stalled { pc: self.cpu.pc });
                break;
            }
        }
        self.bus.catch_up_ppu();
        self.bus.catch_up_apu();
        self.bus.ppu.frame_complete = false;
    }

    /// The CPU just ran an instruction that jumped `back` bytes back: try the idle-loop
    /// (`back == 0`) or the status-poll (`back == 5`) fast-forward; returns the steps skipped.
    #[inline(never)]
    fn skip_loop(&mut self, back: u16, max: u32) -> u32 {
        match back {
            0 => self.skip_idle_loop(max),
            5 => self.skip_status_poll(max),
            _ => 0,
        }
    }

    /// The CPU just ran a taken `BEQ`/`BNE` back to `LDA $2002` (any mirror); `AND #m`;
    /// `BEQ`/`BNE` (SMB waits for the sprite-0 hit so, ~30 lines a frame: perf-notes #35).
    /// If the iteration it just finished is a fixed point (a `$2002` read now would change
    /// nothing and return a value that gives the same A, N and Z and keeps looping; the data
    /// bus holds the branch's dummy read; the interrupt pipeline at rest), runs up to `max`
    /// steps of it in bulk: whole iterations, none past a cycle where the PPU or APU must
    /// catch up or a read that could see a status bit change. Returns the steps skipped.
    fn skip_status_poll(&mut self, max: u32) -> u32 {
        let l = self.cpu.pc;
        // The loop in PRG ROM, its taken branch on the same page (3 cycles).
        if !(0x8000..=0xfff8).contains(&l) || (l ^ (l + 7)) & 0xff00 != 0 {
            return 0;
        }
        let cart = &self.bus.cart;
        let b = |i: u16| cart.prg_read(l + i);
        let branch = b(5);
        if b(0) != 0xad
            || b(1) & 7 != 2
            || b(2) & 0xe0 != 0x20
            || b(3) != 0x29
            || (branch != 0xf0 && branch != 0xd0)
            || b(6) != 0xf9
        {
            return 0;
        }
        let Some(v) = self.bus.ppu.idle_status_read() else {
            return 0;
        };
        let r = v & b(4);
        let zn = if r == 0 { Z } else { r & N };
        if self.cpu.a != r
            || self.cpu.p & (Z | N) != zn
            || (r == 0) != (branch == 0xf0)
            || self.bus.open_bus != b(7)
            || !self.cpu.interrupts_at_rest(&self.bus)
        {
            return 0;
        }
        let n = self.bus.status_poll_iterations().min(max / 3);
        self.bus.skip_status_poll(n);
        3 * n
    }

    /// The CPU just ran an instruction that jumped to itself. If it is `JMP abs` in PRG ROM
    /// and the CPU is at rest, runs up to `max` more iterations of it in bulk, stopping before
    /// any cycle where the PPU or APU could change an interrupt line, and returns how many.
    /// Every skipped iteration would read the same three bytes (no side effects in PRG ROM),
    /// sample the same lines and leave the CPU as it is, so only the clock moves.
    #[inline]
    fn skip_idle_loop(&mut self, max: u32) -> u32 {
        let pc = self.cpu.pc;
        let bus = &mut self.bus;
        if !(0x8000..=0xfffd).contains(&pc) {
            return 0;
        }
        let [lo, hi] = pc.to_le_bytes();
        if bus.cart.prg_read(pc) != 0x4c
            || bus.cart.prg_read(pc + 1) != lo
            || bus.cart.prg_read(pc + 2) != hi
            || bus.open_bus != hi
            || !self.cpu.interrupts_at_rest(bus)
        {
            return 0;
        }
        let n = bus.idle_jmp_iterations().min(max);
        bus.skip_idle_jmp(n);
        n
    }

    /// Turns the fast-forwards on (the default) or off: the idle-loop and `$2002`-poll skips of
    /// `run_frame` and the OAM DMA without per-write PPU catch-ups in vertical blank. The
    /// result is the same either way; tests compare the two.
    pub fn set_fast_forward(&mut self, on: bool) {
        self.fast_forward = on;
        self.bus.fast_dma = on;
    }

    /// CPU RAM ($0000-$07FF).
    pub fn ram(&self) -> &[u8; 0x800] {
        &self.bus.ram
    }

    /// A side-effect-free debug read of RAM, PRG RAM or ROM.
    pub fn peek(&self, addr: u16) -> u8 {
        self.bus.peek(addr)
    }

    /// The last frame as palette indices (0..63), row-major, 256x240. A save state holds no
    /// picture: after `load_state` or `from_flat` this is the console's earlier one until the
    /// next frame is drawn.
    pub fn pixels(&self) -> &[u8; WIDTH * HEIGHT] {
        &self.bus.ppu.pixels
    }

    /// Turns pixel output on or off. The game cannot tell the difference.
    ///
    /// The switch is part of the console's state, as each console of a GPU batch draws by its
    /// own: `save_state` records it and `load_state` and `from_flat` restore it. Call
    /// `set_render` after loading a state saved with the other setting.
    pub fn set_render(&mut self, on: bool) {
        self.bus.ppu.render_pixels = on;
    }

    /// Whether pixel output is on.
    pub fn render(&self) -> bool {
        self.bus.ppu.render_pixels
    }

    /// Runs `n` frames (`run_frame` n times), drawing pixels (when on) for the last one only.
    /// Every frame redraws all 240 visible lines, so the earlier pictures could never be seen:
    /// state and final picture are those of n `run_frame` calls, at the drawing cost of one
    /// (a frameskip of 4 observes one frame in 4).
    pub fn run_frames(&mut self, n: usize) {
        let render = self.render();
        if n > 1 {
            self.set_render(false);
        }
        for i in 0..n {
            if i + 1 == n {
                self.set_render(render);
            }
            self.run_frame();
        }
    }

    /// Frames the PPU has started since power-on.
    pub fn frame_count(&self) -> u64 {
        self.bus.ppu.frame
    }

    /// CPU cycles since power-on.
    pub fn cycles(&self) -> u64 {
        self.bus.cycles
    }

    /// Set when the CPU halted (JAM opcode); the console then only lets time pass.
    pub fn fault(&self) -> Option<Fault> {
        self.cpu.fault
    }

    pub fn cart(&self) -> &Cart {
        &self.bus.cart
    }

    /// Size in bytes of a save state of this console.
    pub fn state_size(&self) -> usize {
        let mut w = StateWriter::new(&mut []);
        self.save_body(&mut w);
        HEADER_LEN + w.len() + CHECKSUM_LEN
    }

    fn save_body(&self, w: &mut StateWriter<'_>) {
        self.cpu.save(w);
        self.bus.save(w);
    }

    /// Writes a save state into `buf` and returns its length. The ROM is not included, only
    /// its hash.
    pub fn save_state_into(&self, buf: &mut [u8]) -> Result<usize, StateError> {
        let size = self.state_size();
        if buf.len() < size {
            return Err(StateError::BufferTooSmall { needed: size, got: buf.len() });
        }
        let body_len = size - HEADER_LEN - CHECKSUM_LEN;
        buf[0..8].copy_from_slice(STATE_MAGIC);
        buf[8..12].copy_from_slice(&STATE_VERSION.to_le_bytes());
        buf[12..16].copy_from_slice(&(body_len as u32).to_le_bytes());
        buf[16..24].copy_from_slice(&self.bus.cart.rom_hash().to_le_bytes());
        let mut w = StateWriter::new(&mut buf[HEADER_LEN..HEADER_LEN + body_len]);
        self.save_body(&mut w);
        let sum = fnv1a(&buf[..HEADER_LEN + body_len]);
        buf[HEADER_LEN + body_len..size].copy_from_slice(&sum.to_le_bytes());
        Ok(size)
    }

    #[cfg(feature = "alloc")]
    pub fn save_state(&self) -> alloc::vec::Vec<u8> {
        let mut v = alloc::vec![0u8; self.state_size()];
        let n = self.save_state_into(&mut v).expect("sized by state_size");
        v.truncate(n);
        v
    }

    /// Restores a state saved from a console running the same ROM. On any error the console
    /// is left exactly as it was. The state brings its pixel switch (`set_render`) but no
    /// picture (`pixels`).
    pub fn load_state(&mut self, state: &[u8]) -> Result<(), StateError> {
        if state.len() < HEADER_LEN + CHECKSUM_LEN {
            return Err(StateError::Truncated { needed: HEADER_LEN + CHECKSUM_LEN, got: state.len() });
        }
        if &state[0..8] != STATE_MAGIC {
            return Err(StateError::BadMagic);
        }
        let version = u32::from_le_bytes(state[8..12].try_into().unwrap());
        if version != STATE_VERSION {
            return Err(StateError::Version { found: version, expected: STATE_VERSION });
        }
        let body_len = u32::from_le_bytes(state[12..16].try_into().unwrap()) as usize;
        let total = HEADER_LEN.saturating_add(body_len).saturating_add(CHECKSUM_LEN);
        if state.len() < total {
            return Err(StateError::Truncated { needed: total, got: state.len() });
        }
        if state.len() > total {
            return Err(StateError::BadField("trailing bytes after the checksum"));
        }
        let hash = u64::from_le_bytes(state[16..24].try_into().unwrap());
        if hash != self.bus.cart.rom_hash() {
            return Err(StateError::OtherRom { found: hash, expected: self.bus.cart.rom_hash() });
        }
        let sum = u64::from_le_bytes(state[HEADER_LEN + body_len..total].try_into().unwrap());
        if sum != fnv1a(&state[..HEADER_LEN + body_len]) {
            return Err(StateError::Checksum);
        }
        // Load into a scratch copy so a bad field cannot leave the console half-loaded.
        let mut scratch = self.clone();
        let mut r = StateReader::new(&state[HEADER_LEN..HEADER_LEN + body_len]);
        scratch.cpu.load(&mut r)?;
        scratch.bus.load(&mut r)?;
        if r.remaining() != 0 {
            return Err(StateError::BadField("trailing bytes in state body"));
        }
        *self = scratch;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nrom() -> alloc::vec::Vec<u8> {
        let mut rom = alloc::vec![0u8; 16 + 0x4000 + 0x2000];
        rom[0..6].copy_from_slice(b"NES\x1a\x01\x01");
        rom
    }

    #[test]
    fn buttons_go_to_the_pad_named() {
        let mut nes = Console::new(&nrom()).unwrap();
        nes.set_buttons(1, 0x81);
        assert_eq!(nes.bus.pads.buttons, [0, 0x81]);
    }

    #[test]
    #[should_panic(expected = "the NES has pads 0 and 1, not 2")]
    fn a_third_pad_is_a_panic_not_another_pads_buttons() {
        Console::new(&nrom()).unwrap().set_buttons(2, 0x01);
    }
}
