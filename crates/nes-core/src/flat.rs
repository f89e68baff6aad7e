//! One flat, `#[repr(C)]` console state, shared byte for byte with the CUDA kernels.
//!
//! The GPU runs one console per thread over an array of [`FlatState`]: everything a console
//! needs except the ROM (which all envs of a batch share) and the picture (a separate, optional
//! buffer). It holds only integers and integer arrays: booleans are `u8` 0/1, enums are their
//! tags, `Option`s are a tag plus payload, so the same bytes mean the same thing in C.
//!
//! The struct is declared once, by the `flat_state!` macro below, which also emits [`FIELDS`]:
//! name, C type, element count and byte offset of every field. nes-cuda generates
//! `kernels/generated/flat_state.h` from that table and a test there fails if the committed
//! header is stale, so the layout is never copied by hand.
//!
//! Fields are ordered by alignment (u64, the memories, u32, the byte arrays the kernels move a word
//! at a time, u16, u8) so `repr(C)` inserts no padding: the C header is then exactly the list of
//! fields (a test checks that the sizes add up).
//!
//! Size: 23,136 bytes (see `the_flat_state_is_23136_bytes`). 18 KiB of that is cartridge RAM:
//! CHR RAM (8 KiB), PRG RAM (8 KiB) and four-screen CIRAM (2 of the 4 KiB), kept for every
//! board so that one layout serves every ROM. SMB uses none of the three; a per-ROM layout
//! could bring it down to ~4.7 KiB (a later optimisation, measured in docs/kernel-notes.md).
//!
//! Conversion ([`Console::to_flat`], [`Console::from_flat`]) walks each chip's save-state
//! fields ([`Snapshot`]) in their order, so it needs no access to private fields, and a chip
//! that grows a field makes the round trip fail loudly (trailing or missing bytes) instead
//! of silently dropping it.

use crate::cart::{Cart, CHR_RAM_SIZE, CIRAM_SIZE, PRG_RAM_SIZE};
use crate::console::Console;
use crate::state::{Snapshot, StateError, StateReader, StateWriter};

/// A field type of [`FlatState`]: an unsigned integer or an array of them.
pub trait FlatField: Copy {
    /// The C spelling of the element type (the kernels' own fixed-width typedefs).
    const CTYPE: &'static str;
    /// Elements: 1 for a scalar.
    const COUNT: usize;
    const ZERO: Self;
    /// Writes the value little-endian at the start of `out` (the C layout on every target
    /// nesle runs on: x86-64, aarch64 and NVIDIA GPUs are all little-endian).
    fn put_le(&self, out: &mut [u8]);
    fn get_le(bytes: &[u8]) -> Self;
}

macro_rules! scalar_field {
    ($($t:ty => $c:literal),*) => {$(
        impl FlatField for $t {
            const CTYPE: &'static str = $c;
            const COUNT: usize = 1;
            const ZERO: Self = 0;
            fn put_le(&self, out: &mut [u8]) {
                out[..core::mem::size_of::<$t>()].copy_from_slice(&self.to_le_bytes());
            }
            fn get_le(bytes: &[u8]) -> Self {
                let mut b = [0u8; core::mem::size_of::<$t>()];
                b.copy_from_slice(&bytes[..core::mem::size_of::<$t>()]);
                <$t>::from_le_bytes(b)
            }
        }
    )*};
}
scalar_field!(u8 => "u8", u16 => "u16", u32 => "u32", u64 => "u64");

impl<T: FlatField, const N: usize> FlatField for [T; N] {
    const CTYPE: &'static str = T::CTYPE;
    const COUNT: usize = N * T::COUNT;
    const ZERO: Self = [T::ZERO; N];
    fn put_le(&self, out: &mut [u8]) {
        let size = core::mem::size_of::<T>();
        for (i, e) in self.iter().enumerate() {
            e.put_le(&mut out[i * size..]);
        }
    }
    fn get_le(bytes: &[u8]) -> Self {
        let size = core::mem::size_of::<T>();
        core::array::from_fn(|i| T::get_le(&bytes[i * size..]))
    }
}

/// Size in bytes of one [`FlatState`].
pub const FLAT_STATE_SIZE: usize = core::mem::size_of::<FlatState>();

macro_rules! flat_state {
    ($($(#[doc = $doc:literal])* $name:ident : $ty:ty,)*) => {
        /// The whole console except ROM and pixels; see the module doc.
        #[repr(C)]
        #[derive(Clone, Copy, PartialEq, Eq)]
        pub struct FlatState {
            $($(#[doc = $doc])* pub $name: $ty,)*
        }

        /// (name, C element type, element count, byte offset) of every field, in order.
        pub const FIELDS: &[(&str, &str, usize, usize)] = &[
            $((stringify!($name), <$ty as FlatField>::CTYPE, <$ty as FlatField>::COUNT,
               core::mem::offset_of!(FlatState, $name)),)*
        ];

        impl FlatState {
            /// All fields zero (not a valid console: use [`Console::to_flat`]).
            pub const fn zeroed() -> FlatState {
                FlatState { $($name: <$ty as FlatField>::ZERO,)* }
            }

            /// The struct's bytes, as C and the GPU see them.
            pub fn to_bytes(&self, out: &mut [u8; FLAT_STATE_SIZE]) {
                $(self.$name.put_le(&mut out[core::mem::offset_of!(FlatState, $name)..]);)*
            }

            /// The inverse of [`FlatState::to_bytes`].
            pub fn from_bytes(bytes: &[u8; FLAT_STATE_SIZE]) -> FlatState {
                FlatState {
                    $($name: <$ty as FlatField>::get_le(&bytes[core::mem::offset_of!(FlatState, $name)..]),)*
                }
            }
        }
    };
}

flat_state! {
    // --- 8-byte fields ---
    /// CPU cycles since power-on.
    bus_cycles: u64,
    /// PPU frames started since power-on.
    ppu_frame: u64,
    /// PPU dots since power-on (MMC3 times A12 with it).
    ppu_dot_clock: u64,
    /// MMC1: CPU cycle of the last register write.
    cart_last_write_cycle: u64,
    /// MMC3: `ppu_dot_clock` when A12 last fell.
    cart_a12_low_since: u64,
    // --- memories: 8-byte aligned (right after the u64s) so kernels can copy them 8 bytes at
    // a time; CPU RAM first, the hottest.
    ram: [u8; 0x800],
    cart_ciram: [u8; CIRAM_SIZE],
    cart_prg_ram: [u8; PRG_RAM_SIZE],
    cart_chr_ram: [u8; CHR_RAM_SIZE],
    // --- 4-byte fields ---
    /// Constant per ROM: PRG ROM bytes.
    cart_prg_len: u32,
    /// Constant per ROM: CHR ROM bytes, or 8192 for CHR RAM.
    cart_chr_len: u32,
    /// Constant per ROM: PRG RAM bytes (0 or up to 8192).
    cart_prg_ram_size: u32,
    /// Byte offsets into PRG ROM of the 8 KiB CPU windows at $8000/$A000/$C000/$E000.
    cart_prg_map: [u32; 4],
    /// Byte offsets into CHR of the 1 KiB PPU windows at $0000..$1C00.
    cart_chr_map: [u32; 8],
    // --- the PPU's byte arrays, 4-byte aligned after the u32s so the kernels move them a word at
    // a time (secondary OAM's fill, a sprite's 4 bytes, the copy to the sprite units); 352
    // bytes, a multiple of 8, so every later field keeps its alignment ---
    ppu_oam: [u8; 256],
    ppu_sec_oam: [u8; 32],
    ppu_palette: [u8; 32],
    ppu_spr_lo: [u8; 8],
    ppu_spr_hi: [u8; 8],
    ppu_spr_attr: [u8; 8],
    ppu_spr_x: [u8; 8],
    // --- 2-byte fields ---
    cpu_pc: u16,
    /// PC of the JAM opcode when `cpu_fault` is 1.
    cpu_fault_pc: u16,
    ppu_scanline: u16,
    ppu_dot: u16,
    ppu_v: u16,
    ppu_t: u16,
    ppu_bg_lo: u16,
    ppu_bg_hi: u16,
    ppu_at_lo: u16,
    ppu_at_hi: u16,
    apu_frame_cycle: u16,
    dmc_sample_addr: u16,
    dmc_sample_len: u16,
    dmc_addr: u16,
    dmc_bytes_remaining: u16,
    dmc_timer: u16,
    // --- 1-byte fields ---
    cpu_a: u8,
    cpu_x: u8,
    cpu_y: u8,
    cpu_s: u8,
    cpu_p: u8,
    /// 0 running, 1 halted by a JAM opcode (`cpu_fault_opcode` at `cpu_fault_pc`), 2 halted
    /// because a frame never reached vertical blank (an impossible state).
    cpu_fault: u8,
    cpu_fault_opcode: u8,
    cpu_decimal_mode: u8,
    cpu_nmi_prev_line: u8,
    cpu_nmi_pending: u8,
    cpu_nmi_take: u8,
    cpu_irq_run: u8,
    cpu_irq_take: u8,
    cpu_reset_pending: u8,
    bus_open_bus: u8,
    /// 1 when a $4014 write is waiting for the CPU's next read (page in `bus_oam_dma_page`).
    bus_oam_dma_pending: u8,
    bus_oam_dma_page: u8,
    pad_strobe: u8,
    pad_buttons: [u8; 2],
    pad_shift: [u8; 2],
    /// Constant per ROM: iNES mapper number (0, 1, 2, 3, 4, 7, 66).
    cart_kind: u8,
    /// Constant per ROM: 1 when CHR is RAM (`chr_ram`), 0 for CHR ROM.
    cart_chr_is_ram: u8,
    /// Constant per ROM: header mirroring (0 H, 1 V, 2 single low, 3 single high, 4 four-screen).
    cart_header_mirroring: u8,
    cart_mirroring: u8,
    cart_latch: u8,
    cart_latch_count: u8,
    cart_prg_ram_enabled: u8,
    cart_prg_ram_writable: u8,
    cart_irq_latch: u8,
    cart_irq_counter: u8,
    cart_irq_reload: u8,
    cart_irq_enabled: u8,
    cart_irq_line: u8,
    cart_a12_high: u8,
    cart_regs: [u8; 8],
    /// nes-core's `Ppu::render_pixels`; the kernels draw only when given a pixel buffer.
    ppu_render_pixels: u8,
    ppu_frame_complete: u8,
    ppu_ctrl: u8,
    ppu_mask: u8,
    ppu_status: u8,
    ppu_x: u8,
    ppu_w: u8,
    ppu_oam_addr: u8,
    ppu_read_buffer: u8,
    ppu_io_latch: u8,
    ppu_warming_up: u8,
    ppu_suppress_vbl: u8,
    ppu_odd_frame: u8,
    /// Latched at dot 338 of the pre-render line: this frame skips its last dot.
    ppu_skip_last_dot: u8,
    ppu_nt_latch: u8,
    ppu_at_latch: u8,
    ppu_pat_lo_latch: u8,
    ppu_pat_hi_latch: u8,
    ppu_eval_buffer: u8,
    ppu_eval_sec_addr: u8,
    ppu_eval_n: u8,
    ppu_eval_m: u8,
    ppu_eval_in_range: u8,
    ppu_eval_done: u8,
    ppu_eval_overflow_count: u8,
    ppu_eval_sprite0: u8,
    ppu_eval_count: u8,
    ppu_spr_count: u8,
    ppu_spr_zero: u8,
    apu_frame_five_step: u8,
    apu_frame_irq_inhibit: u8,
    apu_frame_irq_flag: u8,
    apu_frame_step: u8,
    apu_frame_write_delay: u8,
    apu_frame_pending: u8,
    apu_frame_last_write: u8,
    apu_frame_block: u8,
    /// Length counters of pulse 1, pulse 2, triangle, noise.
    apu_len_counter: [u8; 4],
    apu_len_enabled: [u8; 4],
    apu_len_halt: [u8; 4],
    apu_len_new_halt: [u8; 4],
    apu_len_reload: [u8; 4],
    apu_len_reload_seen: [u8; 4],
    dmc_irq_enable: u8,
    dmc_loop_flag: u8,
    dmc_rate: u8,
    dmc_output_level: u8,
    dmc_buffer: u8,
    dmc_buffer_empty: u8,
    dmc_shift: u8,
    dmc_bits_remaining: u8,
    dmc_silence: u8,
    dmc_irq_flag: u8,
    dmc_start_delay: u8,
    apu_odd_cycle: u8,
    /// Explicit tail padding: keeps the size a multiple of 8 with no implicit padding (the
    /// kernels copy states 8 bytes at a time). Adjust when fields change; a test says how.
    reserved: [u8; 7],
}

impl core::fmt::Debug for FlatState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FlatState")
            .field("cpu_pc", &format_args!("{:04x}", self.cpu_pc))
            .field("cpu_fault", &self.cpu_fault)
            .field("bus_cycles", &self.bus_cycles)
            .field("ppu_frame", &self.ppu_frame)
            .finish_non_exhaustive()
    }
}

impl Default for FlatState {
    fn default() -> Self {
        FlatState::zeroed()
    }
}

/// The first field in which `a` and `b` differ, as (field name, element index).
pub fn first_difference(a: &FlatState, b: &FlatState) -> Option<(&'static str, usize)> {
    if a == b {
        return None;
    }
    let (mut ba, mut bb) = ([0u8; FLAT_STATE_SIZE], [0u8; FLAT_STATE_SIZE]);
    a.to_bytes(&mut ba);
    b.to_bytes(&mut bb);
    for &(name, ctype, count, offset) in FIELDS {
        let size = elem_size(ctype);
        for i in 0..count {
            let r = offset + i * size..offset + (i + 1) * size;
            if ba[r.clone()] != bb[r] {
                return Some((name, i));
            }
        }
    }
    None
}

/// Bytes of one element of a C type named in [`FIELDS`].
pub fn elem_size(ctype: &str) -> usize {
    match ctype {
        "u8" => 1,
        "u16" => 2,
        "u32" => 4,
        _ => 8,
    }
}

/// A save-state body is about 22.7 KiB; this scratch buffer holds it with room to spare.
const SCRATCH: usize = 24 * 1024;

impl Console {
    /// This console as a [`FlatState`] (pixels excluded).
    pub fn to_flat(&self) -> FlatState {
        let mut buf = [0u8; SCRATCH];
        let mut w = StateWriter::new(&mut buf);
        self.cpu.save(&mut w);
        self.bus.save(&mut w);
        let len = w.len();
        assert!(len <= SCRATCH, "flat.rs: save-state body ({len} bytes) outgrew the scratch buffer");
        let mut f = FlatState::zeroed();
        let cart = &self.bus.cart;
        f.cart_kind = cart.kind.number() as u8;
        f.cart_chr_is_ram = cart.chr_is_ram as u8;
        f.cart_header_mirroring = cart.header_mirroring as u8;
        f.cart_prg_len = cart.prg_len() as u32;
        f.cart_chr_len = cart.chr_len() as u32;
        f.cart_prg_ram_size = cart.prg_ram_size as u32;
        let mut r = FromState { r: StateReader::new(&buf[..len]), err: None };
        walk(&mut f, &mut r);
        assert!(
            r.err.is_none() && r.r.remaining() == 0,
            "flat.rs is out of date with the chips' save-state fields ({:?}, {} bytes left)",
            r.err,
            r.r.remaining()
        );
        f
    }

    /// A console in state `flat`, running the ROM of `cart` (any cart of the same ROM: its
    /// RAM and registers are overwritten). Fails if `flat` belongs to another board or holds
    /// a value the console can never be in.
    pub fn from_flat(flat: &FlatState, cart: &Cart) -> Result<Console, StateError> {
        if flat.cart_kind as u16 != cart.kind.number()
            || flat.cart_prg_len as usize != cart.prg_len()
            || flat.cart_chr_len as usize != cart.chr_len()
            || flat.cart_chr_is_ram != cart.chr_is_ram as u8
            || flat.cart_prg_ram_size as usize != cart.prg_ram_size
            || flat.cart_header_mirroring != cart.header_mirroring as u8
        {
            return Err(StateError::BadField("flat: cartridge of another ROM"));
        }
        let mut buf = [0u8; SCRATCH];
        let mut w = ToState { w: StateWriter::new(&mut buf) };
        let mut copy = *flat;
        walk(&mut copy, &mut w);
        let len = w.w.len();
        let mut console = Console::with_cart(cart.clone());
        let mut r = StateReader::new(&buf[..len]);
        console.cpu.load(&mut r)?;
        console.bus.load(&mut r)?;
        if r.remaining() != 0 {
            return Err(StateError::BadField("flat: trailing bytes"));
        }
        Ok(console)
    }
}

/// Visits the fields of a [`FlatState`] in the chips' save-state order.
trait Visit {
    fn u8(&mut self, f: &mut u8);
    fn bool(&mut self, f: &mut u8);
    fn u16(&mut self, f: &mut u16);
    fn u32(&mut self, f: &mut u32);
    fn u64(&mut self, f: &mut u64);
    fn bytes(&mut self, f: &mut [u8]);
}

struct FromState<'a> {
    r: StateReader<'a>,
    err: Option<StateError>,
}

impl FromState<'_> {
    fn keep<T: Default>(&mut self, v: Result<T, StateError>) -> T {
        match v {
            Ok(v) => v,
            Err(e) => {
                self.err.get_or_insert(e);
                T::default()
            }
        }
    }
}

impl Visit for FromState<'_> {
    fn u8(&mut self, f: &mut u8) {
        let v = self.r.u8();
        *f = self.keep(v);
    }
    fn bool(&mut self, f: &mut u8) {
        let v = self.r.bool();
        *f = self.keep(v) as u8;
    }
    fn u16(&mut self, f: &mut u16) {
        let v = self.r.u16();
        *f = self.keep(v);
    }
    fn u32(&mut self, f: &mut u32) {
        let v = self.r.u32();
        *f = self.keep(v);
    }
    fn u64(&mut self, f: &mut u64) {
        let v = self.r.u64();
        *f = self.keep(v);
    }
    fn bytes(&mut self, f: &mut [u8]) {
        let v = self.r.bytes(f);
        self.keep(v);
    }
}

struct ToState<'a> {
    w: StateWriter<'a>,
}

impl Visit for ToState<'_> {
    fn u8(&mut self, f: &mut u8) {
        self.w.u8(*f);
    }
    fn bool(&mut self, f: &mut u8) {
        // A u8 other than 0/1 goes through as is; the chip's loader refuses it.
        self.w.u8(*f);
    }
    fn u16(&mut self, f: &mut u16) {
        self.w.u16(*f);
    }
    fn u32(&mut self, f: &mut u32) {
        self.w.u32(*f);
    }
    fn u64(&mut self, f: &mut u64) {
        self.w.u64(*f);
    }
    fn bytes(&mut self, f: &mut [u8]) {
        self.w.bytes(f);
    }
}

/// The one ordered list: `Cpu::save` then `Bus::save` (RAM, clock, pads, cart, PPU, APU).
fn walk<V: Visit>(s: &mut FlatState, v: &mut V) {
    // cpu.rs
    v.u8(&mut s.cpu_a);
    v.u8(&mut s.cpu_x);
    v.u8(&mut s.cpu_y);
    v.u8(&mut s.cpu_s);
    v.u8(&mut s.cpu_p);
    v.u16(&mut s.cpu_pc);
    v.u8(&mut s.cpu_fault);
    v.u8(&mut s.cpu_fault_opcode);
    v.u16(&mut s.cpu_fault_pc);
    v.bool(&mut s.cpu_decimal_mode);
    v.bool(&mut s.cpu_nmi_prev_line);
    v.bool(&mut s.cpu_nmi_pending);
    v.bool(&mut s.cpu_nmi_take);
    v.bool(&mut s.cpu_irq_run);
    v.bool(&mut s.cpu_irq_take);
    v.bool(&mut s.cpu_reset_pending);
    // bus.rs
    v.bytes(&mut s.ram);
    v.u64(&mut s.bus_cycles);
    v.u8(&mut s.bus_open_bus);
    v.bool(&mut s.bus_oam_dma_pending);
    v.u8(&mut s.bus_oam_dma_page);
    // controller.rs
    v.bytes(&mut s.pad_buttons);
    v.bytes(&mut s.pad_shift);
    v.bool(&mut s.pad_strobe);
    // cart.rs
    v.bytes(&mut s.cart_chr_ram);
    v.bytes(&mut s.cart_prg_ram);
    v.bytes(&mut s.cart_ciram);
    v.u8(&mut s.cart_mirroring);
    for m in s.cart_prg_map.iter_mut() {
        v.u32(m);
    }
    for m in s.cart_chr_map.iter_mut() {
        v.u32(m);
    }
    v.bytes(&mut s.cart_regs);
    v.u8(&mut s.cart_latch);
    v.u8(&mut s.cart_latch_count);
    v.bool(&mut s.cart_prg_ram_enabled);
    v.bool(&mut s.cart_prg_ram_writable);
    v.u64(&mut s.cart_last_write_cycle);
    v.u8(&mut s.cart_irq_latch);
    v.u8(&mut s.cart_irq_counter);
    v.bool(&mut s.cart_irq_reload);
    v.bool(&mut s.cart_irq_enabled);
    v.bool(&mut s.cart_irq_line);
    v.bool(&mut s.cart_a12_high);
    v.u64(&mut s.cart_a12_low_since);
    // ppu.rs
    v.bool(&mut s.ppu_render_pixels);
    v.bool(&mut s.ppu_frame_complete);
    v.u16(&mut s.ppu_scanline);
    v.u16(&mut s.ppu_dot);
    v.u64(&mut s.ppu_frame);
    v.u64(&mut s.ppu_dot_clock);
    v.u8(&mut s.ppu_ctrl);
    v.u8(&mut s.ppu_mask);
    v.u8(&mut s.ppu_status);
    v.u16(&mut s.ppu_v);
    v.u16(&mut s.ppu_t);
    v.u8(&mut s.ppu_x);
    v.bool(&mut s.ppu_w);
    v.u8(&mut s.ppu_oam_addr);
    v.u8(&mut s.ppu_read_buffer);
    v.u8(&mut s.ppu_io_latch);
    v.bytes(&mut s.ppu_palette);
    v.bytes(&mut s.ppu_oam);
    v.bool(&mut s.ppu_warming_up);
    v.bool(&mut s.ppu_suppress_vbl);
    v.bool(&mut s.ppu_odd_frame);
    v.bool(&mut s.ppu_skip_last_dot);
    v.u8(&mut s.ppu_nt_latch);
    v.u8(&mut s.ppu_at_latch);
    v.u8(&mut s.ppu_pat_lo_latch);
    v.u8(&mut s.ppu_pat_hi_latch);
    v.u16(&mut s.ppu_bg_lo);
    v.u16(&mut s.ppu_bg_hi);
    v.u16(&mut s.ppu_at_lo);
    v.u16(&mut s.ppu_at_hi);
    v.bytes(&mut s.ppu_sec_oam);
    v.u8(&mut s.ppu_eval_buffer);
    v.u8(&mut s.ppu_eval_sec_addr);
    v.u8(&mut s.ppu_eval_n);
    v.u8(&mut s.ppu_eval_m);
    v.bool(&mut s.ppu_eval_in_range);
    v.bool(&mut s.ppu_eval_done);
    v.u8(&mut s.ppu_eval_overflow_count);
    v.bool(&mut s.ppu_eval_sprite0);
    v.u8(&mut s.ppu_eval_count);
    v.u8(&mut s.ppu_spr_count);
    v.bool(&mut s.ppu_spr_zero);
    v.bytes(&mut s.ppu_spr_lo);
    v.bytes(&mut s.ppu_spr_hi);
    v.bytes(&mut s.ppu_spr_attr);
    v.bytes(&mut s.ppu_spr_x);
    // apu.rs: frame counter, the four length counters, DMC, cycle parity.
    v.bool(&mut s.apu_frame_five_step);
    v.bool(&mut s.apu_frame_irq_inhibit);
    v.bool(&mut s.apu_frame_irq_flag);
    v.u8(&mut s.apu_frame_step);
    v.u16(&mut s.apu_frame_cycle);
    v.u8(&mut s.apu_frame_write_delay);
    v.u8(&mut s.apu_frame_pending);
    v.u8(&mut s.apu_frame_last_write);
    v.u8(&mut s.apu_frame_block);
    for i in 0..4 {
        v.u8(&mut s.apu_len_counter[i]);
        v.bool(&mut s.apu_len_enabled[i]);
        v.bool(&mut s.apu_len_halt[i]);
        v.bool(&mut s.apu_len_new_halt[i]);
        v.u8(&mut s.apu_len_reload[i]);
        v.u8(&mut s.apu_len_reload_seen[i]);
    }
    v.bool(&mut s.dmc_irq_enable);
    v.bool(&mut s.dmc_loop_flag);
    v.u8(&mut s.dmc_rate);
    v.u8(&mut s.dmc_output_level);
    v.u16(&mut s.dmc_sample_addr);
    v.u16(&mut s.dmc_sample_len);
    v.u16(&mut s.dmc_addr);
    v.u16(&mut s.dmc_bytes_remaining);
    v.u8(&mut s.dmc_buffer);
    v.bool(&mut s.dmc_buffer_empty);
    v.u8(&mut s.dmc_shift);
    v.u8(&mut s.dmc_bits_remaining);
    v.bool(&mut s.dmc_silence);
    v.u16(&mut s.dmc_timer);
    v.bool(&mut s.dmc_irq_flag);
    v.u8(&mut s.dmc_start_delay);
    v.bool(&mut s.apu_odd_cycle);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 32 KiB NROM program: a loop that counts in RAM, writes $2000/$2001 (NMI and
    /// rendering on) and an NMI handler that strobes the pad and stores its bits.
    fn test_rom() -> Vec<u8> {
        let mut rom = vec![0u8; 16 + 0x8000 + 0x2000];
        rom[0..4].copy_from_slice(b"NES\x1a");
        rom[4] = 2;
        rom[5] = 1;
        #[rustfmt::skip]
        let prg: &[u8] = &[
            0x78, 0xa2, 0xff, 0x9a,             // SEI; LDX #$FF; TXS
            0x2c, 0x02, 0x20, 0x10, 0xfb,       // vbl wait: BIT $2002; BPL
            0x2c, 0x02, 0x20, 0x10, 0xfb,       // second vbl wait
            0xa9, 0x80, 0x8d, 0x00, 0x20,       // LDA #$80; STA $2000
            0xa9, 0x1e, 0x8d, 0x01, 0x20,       // LDA #$1E; STA $2001
            0xe6, 0x10, 0x4c, 0x18, 0x80,       // loop: INC $10; JMP loop
        ];
        rom[16..16 + prg.len()].copy_from_slice(prg);
        #[rustfmt::skip]
        let nmi: &[u8] = &[
            0xa9, 0x01, 0x8d, 0x16, 0x40, 0xa9, 0x00, 0x8d, 0x16, 0x40, // strobe the pad
            0xad, 0x16, 0x40, 0x85, 0x20, 0xad, 0x16, 0x40, 0x85, 0x21, // two bits to $20/$21
            0xe6, 0x11, 0x40,                                           // INC $11; RTI
        ];
        rom[16 + 0x100..16 + 0x100 + nmi.len()].copy_from_slice(nmi);
        let v = 16 + 0x7ffa;
        rom[v..v + 6].copy_from_slice(&[0x00, 0x81, 0x00, 0x80, 0x00, 0x80]);
        rom
    }

    #[test]
    fn the_fields_are_packed_without_padding_and_in_offset_order() {
        let mut at = 0;
        for &(name, ctype, count, offset) in FIELDS {
            assert_eq!(offset, at, "field {name} is not where the previous one ended");
            at += elem_size(ctype) * count;
        }
        assert_eq!(at, FLAT_STATE_SIZE, "resize `reserved` so the fields end at a multiple of 8");
        assert_eq!(FLAT_STATE_SIZE % 8, 0);
    }

    #[test]
    fn the_flat_state_is_23136_bytes() {
        assert_eq!(FLAT_STATE_SIZE, 23136);
    }

    #[test]
    fn byte_views_round_trip() {
        let c = Console::new(&test_rom()).unwrap();
        let f = c.to_flat();
        let mut b = [0u8; FLAT_STATE_SIZE];
        f.to_bytes(&mut b);
        assert_eq!(FlatState::from_bytes(&b), f);
        assert_eq!(&b[0..8], &f.bus_cycles.to_le_bytes());
    }

    #[test]
    fn a_running_console_continues_identically_after_a_flat_round_trip() {
        let rom = test_rom();
        let mut a = Console::new(&rom).unwrap();
        for frame in 0..5u8 {
            a.set_buttons(0, frame.wrapping_mul(37));
            a.run_frame();
        }
        let flat = a.to_flat();
        assert_eq!(flat.cart_prg_len, 0x8000);
        let mut b = Console::from_flat(&flat, a.cart()).unwrap();
        assert_eq!(b.to_flat(), flat);
        assert_eq!(b.save_state(), a.save_state());
        for frame in 0..20u8 {
            a.set_buttons(0, frame.wrapping_mul(91));
            b.set_buttons(0, frame.wrapping_mul(91));
            a.run_frame();
            b.run_frame();
            assert_eq!(first_difference(&a.to_flat(), &b.to_flat()), None, "frame {frame}");
        }
        assert!(a.ram()[0x11] > 10, "the NMI handler ran");
    }

    #[test]
    fn first_difference_names_the_field_and_element() {
        let c = Console::new(&test_rom()).unwrap();
        let a = c.to_flat();
        let mut b = a;
        b.ppu_oam[7] ^= 1;
        assert_eq!(first_difference(&a, &b), Some(("ppu_oam", 7)));
        b = a;
        b.cart_prg_map[2] += 1;
        assert_eq!(first_difference(&a, &b), Some(("cart_prg_map", 2)));
    }

    #[test]
    fn a_flat_state_of_another_board_is_refused() {
        let c = Console::new(&test_rom()).unwrap();
        let mut f = c.to_flat();
        f.cart_kind = 4;
        assert!(Console::from_flat(&f, c.cart()).is_err());
    }

    #[test]
    fn a_clock_past_twenty_thousand_years_is_refused() {
        let c = Console::new(&test_rom()).unwrap();
        let f = c.to_flat();
        let g = FlatState { bus_cycles: (1 << 60) - 1, ..f };
        assert!(Console::from_flat(&g, c.cart()).is_ok());
        let g = FlatState { bus_cycles: 1 << 60, ..f };
        assert!(Console::from_flat(&g, c.cart()).is_err());
    }

    #[test]
    fn an_mmc1_shifter_past_four_bits_is_refused() {
        let mut rom = test_rom();
        rom[6] = 0x10; // mapper 1
        let c = Console::new(&rom).unwrap();
        let f = c.to_flat();
        for count in 0..=4 {
            let g = FlatState { cart_latch_count: count, ..f };
            assert!(Console::from_flat(&g, c.cart()).is_ok(), "{count} bits");
        }
        // A count of 5 or more would shift the next bits out of the latch.
        for count in [5, 8, 255] {
            let g = FlatState { cart_latch_count: count, ..f };
            assert!(Console::from_flat(&g, c.cart()).is_err(), "{count} bits");
        }
    }

    #[test]
    fn a_prg_window_is_a_whole_bank_or_the_state_is_refused() {
        let c = Console::new(&test_rom()).unwrap();
        let f = c.to_flat();
        assert!(Console::from_flat(&f, c.cart()).is_ok());
        // Inside the ROM, but not where any mapper can put a window.
        let mut g = f;
        g.cart_prg_map[1] -= 1;
        assert!(Console::from_flat(&g, c.cart()).is_err());
        let mut g = f;
        g.cart_prg_map[3] = f.cart_prg_map[3] + 0x2000;
        assert!(Console::from_flat(&g, c.cart()).is_err(), "past the ROM's end");
    }
}
