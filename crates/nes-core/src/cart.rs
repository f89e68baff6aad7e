//! Cartridges: the iNES / NES 2.0 file format and the board that maps it into the console.
//!
//! A cartridge answers the CPU at $4020-$FFFF and the PPU at $0000-$3EFF. On real hardware the
//! nametable RAM (CIRAM) sits on the console, but the cartridge wires its address and enable
//! lines, so it decides mirroring; we therefore keep CIRAM here, which lets the PPU treat its
//! whole address space as "the cartridge" and lets boards like MMC3 watch every PPU address.
//!
//! Banking is precomputed: every register write recomputes `prg_map` (four 8 KiB CPU windows)
//! and `chr_map` (eight 1 KiB PPU windows) as byte offsets, so a read is one shift, one add and
//! one load. The CUDA kernel mirrors this struct's saved fields; `prg_window` (a copy of the
//! four mapped PRG banks, so that a CPU read is one masked load) is derived and CPU-only.

use crate::mapper::{self, MapperKind};
use crate::state::{Snapshot, StateError, StateReader, StateWriter};

/// Shared, immutable ROM bytes: reference-counted with `alloc`, a static slice without it.
#[cfg(feature = "alloc")]
pub type RomBytes = alloc::sync::Arc<[u8]>;
#[cfg(not(feature = "alloc"))]
pub type RomBytes = &'static [u8];

pub const PRG_RAM_SIZE: usize = 0x2000;
pub const CHR_RAM_SIZE: usize = 0x2000;
/// Two 1 KiB nametables on the console, two more for four-screen boards.
pub const CIRAM_SIZE: usize = 0x1000;
/// Larger than any board nesle supports can address (MMC1/MMC3: 512 KiB PRG, 256 KiB CHR).
const MAX_ROM: usize = 0x40_0000;

/// Why a ROM file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RomError {
    /// Fewer than 16 bytes: not even a header.
    TooShort { len: usize },
    /// The file does not start with `NES\x1A`.
    BadMagic,
    /// The header declares more PRG/CHR data than the file holds.
    Truncated { expected: usize, got: usize },
    /// The header declares no PRG ROM at all.
    NoPrgRom,
    /// A mapper nesle does not implement.
    UnsupportedMapper { mapper: u16 },
    /// A memory size nesle cannot map (e.g. more CHR RAM than 8 KiB).
    UnsupportedSize { what: &'static str, bytes: usize },
}

impl core::fmt::Display for RomError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RomError::TooShort { len } => write!(f, "ROM too short: {len} bytes, an iNES header alone is 16"),
            RomError::BadMagic => write!(f, "not an iNES ROM: the file does not start with \"NES\\x1A\""),
            RomError::Truncated { expected, got } => write!(
                f,
                "ROM truncated: the header declares {expected} bytes of data, the file holds {got}"
            ),
            RomError::NoPrgRom => write!(f, "bad ROM header: it declares no PRG ROM"),
            RomError::UnsupportedMapper { mapper } => write!(
                f,
                "mapper {mapper} is not supported (supported: 0 NROM, 1 MMC1, 2 UxROM, 3 CNROM, 4 MMC3, 7 AxROM, 66 GxROM)"
            ),
            RomError::UnsupportedSize { what, bytes } => write!(f, "unsupported {what} size: {bytes} bytes"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for RomError {}

/// How the four logical nametables map onto CIRAM pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mirroring {
    Horizontal = 0,
    Vertical = 1,
    SingleLow = 2,
    SingleHigh = 3,
    FourScreen = 4,
}

impl Mirroring {
    fn from_u8(v: u8) -> Option<Mirroring> {
        Some(match v {
            0 => Mirroring::Horizontal,
            1 => Mirroring::Vertical,
            2 => Mirroring::SingleLow,
            3 => Mirroring::SingleHigh,
            4 => Mirroring::FourScreen,
            _ => return None,
        })
    }
}

/// What the 16-byte header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub mapper: u16,
    pub submapper: u8,
    pub prg_rom: usize,
    pub chr_rom: usize,
    pub chr_ram: usize,
    pub prg_ram: usize,
    pub mirroring: Mirroring,
    pub battery: bool,
    pub trainer: bool,
    pub nes2: bool,
}

impl Header {
    /// Parses and validates a header against the file length.
    pub fn parse(rom: &[u8]) -> Result<Header, RomError> {
        if rom.len() < 16 {
            return Err(RomError::TooShort { len: rom.len() });
        }
        if &rom[0..4] != b"NES\x1a" {
            return Err(RomError::BadMagic);
        }
        let f6 = rom[6];
        let f7 = rom[7];
        let nes2 = f7 & 0x0c == 0x08;
        let mut mapper = (f6 >> 4) as u16;
        let (prg_rom, chr_rom, prg_ram, chr_ram, submapper);
        if nes2 {
            mapper |= (f7 & 0xf0) as u16 | (((rom[8] & 0x0f) as u16) << 8);
            submapper = rom[8] >> 4;
            prg_rom = nes2_rom_size(rom[4], rom[9] & 0x0f, 0x4000);
            chr_rom = nes2_rom_size(rom[5], rom[9] >> 4, 0x2000);
            // NES 2.0 maps exactly the RAM it declares (volatile + battery-backed).
            prg_ram = shift_size(rom[10] & 0x0f) + shift_size(rom[10] >> 4);
            chr_ram = shift_size(rom[11] & 0x0f) + shift_size(rom[11] >> 4);
        } else {
            // Old dumps tagged "DiskDude!" in bytes 7-15 carry garbage in the high mapper nibble.
            if rom[12..16].iter().all(|&b| b == 0) {
                mapper |= (f7 & 0xf0) as u16;
            }
            submapper = 0;
            prg_rom = rom[4] as usize * 0x4000;
            chr_rom = rom[5] as usize * 0x2000;
            // iNES 1.0 cannot declare PRG RAM reliably: map 8 KiB on every board, as test ROMs
            // and most emulators expect.
            prg_ram = PRG_RAM_SIZE;
            chr_ram = if chr_rom == 0 { CHR_RAM_SIZE } else { 0 };
        }
        if prg_rom == 0 {
            return Err(RomError::NoPrgRom);
        }
        if prg_ram > PRG_RAM_SIZE {
            return Err(RomError::UnsupportedSize { what: "PRG RAM", bytes: prg_ram });
        }
        if chr_ram > CHR_RAM_SIZE {
            return Err(RomError::UnsupportedSize { what: "CHR RAM", bytes: chr_ram });
        }
        // Banking works in 8 KiB PRG and 1 KiB CHR units; NES 2.0's exponent form can declare
        // other sizes (and absurd ones), which no supported board uses.
        if prg_rom % 0x2000 != 0 || prg_rom > MAX_ROM {
            return Err(RomError::UnsupportedSize { what: "PRG ROM", bytes: prg_rom });
        }
        if chr_rom % 0x400 != 0 || chr_rom > MAX_ROM {
            return Err(RomError::UnsupportedSize { what: "CHR ROM", bytes: chr_rom });
        }
        let trainer = f6 & 0x04 != 0;
        let expected = 16 + if trainer { 512 } else { 0 } + prg_rom + chr_rom;
        if rom.len() < expected {
            return Err(RomError::Truncated { expected, got: rom.len() });
        }
        // A trainer's 512 bytes load at $7000-$71FF, in PRG RAM.
        if trainer && prg_ram < 0x1200 {
            return Err(RomError::UnsupportedSize { what: "PRG RAM (a trainer needs $7000-$71FF)", bytes: prg_ram });
        }
        let mirroring = if f6 & 0x08 != 0 {
            Mirroring::FourScreen
        } else if f6 & 0x01 != 0 {
            Mirroring::Vertical
        } else {
            Mirroring::Horizontal
        };
        let Some(kind) = MapperKind::from_number(mapper) else {
            return Err(RomError::UnsupportedMapper { mapper });
        };
        // MMC3 fixes the second-to-last 8 KiB bank: it needs at least two.
        if kind == MapperKind::Mmc3 && prg_rom < 0x4000 {
            return Err(RomError::UnsupportedSize { what: "MMC3 PRG ROM", bytes: prg_rom });
        }
        Ok(Header {
            mapper,
            submapper,
            prg_rom,
            chr_rom,
            chr_ram,
            prg_ram,
            mirroring,
            battery: f6 & 0x02 != 0,
            trainer,
            nes2,
        })
    }

    /// Byte offset of PRG ROM in the file.
    pub fn prg_offset(&self) -> usize {
        16 + if self.trainer { 512 } else { 0 }
    }
}

fn shift_size(shift: u8) -> usize {
    if shift == 0 {
        0
    } else {
        64usize << shift
    }
}

fn nes2_rom_size(lsb: u8, msb: u8, unit: usize) -> usize {
    if msb == 0x0f {
        // Exponent-multiplier form: 2^E * (2M + 1).
        let e = (lsb >> 2) as u32;
        let m = (lsb & 3) as usize;
        if e >= 30 {
            return usize::MAX / 2;
        }
        // Saturating: on a 32-bit target 2^29 * 7 overflows, and any size past the limit is refused.
        (1usize << e).saturating_mul(m * 2 + 1)
    } else {
        (((msb as usize) << 8) | lsb as usize).saturating_mul(unit)
    }
}

/// CIRAM page of each logical nametable ($2000/$2400/$2800/$2C00), by `Mirroring as usize`.
const NT_PAGE: [[u8; 4]; 5] = [[0, 0, 1, 1], [0, 1, 0, 1], [0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 2, 3]];

/// A cartridge plugged into the console: ROM, board RAM, CIRAM and the mapper registers.
#[derive(Clone)]
pub struct Cart {
    pub(crate) prg_rom: RomBytes,
    /// CHR ROM, or empty when the board has CHR RAM.
    pub(crate) chr_rom: RomBytes,
    pub(crate) chr_ram: [u8; CHR_RAM_SIZE],
    pub(crate) chr_is_ram: bool,
    pub(crate) prg_ram: [u8; PRG_RAM_SIZE],
    pub(crate) prg_ram_size: usize,
    pub(crate) ciram: [u8; CIRAM_SIZE],
    pub(crate) kind: MapperKind,
    pub(crate) header_mirroring: Mirroring,
    pub(crate) mirroring: Mirroring,
    /// Byte offsets into PRG ROM of the 8 KiB windows at $8000, $A000, $C000, $E000.
    pub(crate) prg_map: [u32; 4],
    /// The four windows' bytes, copied out of `prg_rom` whenever `prg_map` changes: a CPU
    /// read of $8000-$FFFF (most reads: opcodes and operands) is then one masked index,
    /// without the map, the shared ROM's pointer and a bounds check (perf-notes #32).
    /// Derived from `prg_map`, not saved.
    pub(crate) prg_window: [u8; 0x8000],
    /// Byte offsets into CHR ROM/RAM of the 1 KiB windows at $0000..$1C00.
    pub(crate) chr_map: [u32; 8],
    /// Board registers; their meaning depends on the mapper (see each `mapper/m*.rs`).
    pub(crate) regs: [u8; 8],
    /// MMC1 shift register / MMC3 bank select and similar small latches.
    pub(crate) latch: u8,
    pub(crate) latch_count: u8,
    pub(crate) prg_ram_enabled: bool,
    pub(crate) prg_ram_writable: bool,
    /// MMC1 ignores a write on the cycle right after another (the RMW dummy write).
    pub(crate) last_write_cycle: u64,
    // MMC3 scanline counter.
    pub(crate) irq_latch: u8,
    pub(crate) irq_counter: u8,
    pub(crate) irq_reload: bool,
    pub(crate) irq_enabled: bool,
    pub(crate) irq_line: bool,
    pub(crate) a12_high: bool,
    pub(crate) a12_low_since: u64,
    hash: u64,
}

impl core::fmt::Debug for Cart {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Cart")
            .field("kind", &self.kind)
            .field("prg_rom", &self.prg_rom.len())
            .field("chr_rom", &self.chr_rom.len())
            .field("mirroring", &self.mirroring)
            .field("hash", &format_args!("{:016x}", self.hash))
            .finish()
    }
}

impl Cart {
    /// Parses an iNES / NES 2.0 file and plugs in a freshly powered-on board.
    #[cfg(feature = "alloc")]
    pub fn from_ines(rom: &[u8]) -> Result<Cart, RomError> {
        let h = Header::parse(rom)?;
        let prg_at = h.prg_offset();
        let prg: RomBytes = RomBytes::from(&rom[prg_at..prg_at + h.prg_rom]);
        let chr: RomBytes = RomBytes::from(&rom[prg_at + h.prg_rom..prg_at + h.prg_rom + h.chr_rom]);
        Ok(Cart::with_parts(&h, prg, chr, &rom[16..prg_at], fnv1a_rom(rom, &h)))
    }

    /// Like `from_ines`, for `no_std` users without an allocator: the ROM must outlive the cart.
    #[cfg(not(feature = "alloc"))]
    pub fn from_ines(rom: &'static [u8]) -> Result<Cart, RomError> {
        let h = Header::parse(rom)?;
        let prg_at = h.prg_offset();
        let prg = &rom[prg_at..prg_at + h.prg_rom];
        let chr = &rom[prg_at + h.prg_rom..prg_at + h.prg_rom + h.chr_rom];
        Ok(Cart::with_parts(&h, prg, chr, &rom[16..prg_at], fnv1a_rom(rom, &h)))
    }

    /// `trainer`: the file's 512-byte trainer, or empty.
    fn with_parts(h: &Header, prg_rom: RomBytes, chr_rom: RomBytes, trainer: &[u8], hash: u64) -> Cart {
        let kind = MapperKind::from_number(h.mapper).expect("validated by Header::parse");
        let mut cart = Cart {
            prg_rom,
            chr_is_ram: chr_rom.is_empty(),
            chr_rom,
            chr_ram: [0; CHR_RAM_SIZE],
            prg_ram: [0; PRG_RAM_SIZE],
            prg_ram_size: h.prg_ram,
            ciram: [0; CIRAM_SIZE],
            kind,
            header_mirroring: h.mirroring,
            mirroring: h.mirroring,
            prg_map: [0; 4],
            prg_window: [0; 0x8000],
            chr_map: [0; 8],
            regs: [0; 8],
            latch: 0,
            latch_count: 0,
            prg_ram_enabled: true,
            prg_ram_writable: true,
            last_write_cycle: u64::MAX - 1,
            irq_latch: 0,
            irq_counter: 0,
            irq_reload: false,
            irq_enabled: false,
            irq_line: false,
            a12_high: false,
            a12_low_since: 0,
            hash,
        };
        mapper::power_on(&mut cart);
        cart.fill_prg_window();
        cart.prg_ram[0x1000..0x1000 + trainer.len()].copy_from_slice(trainer); // at $7000
        cart
    }

    /// Copies PRG ROM window `slot` (8 KiB at `prg_map[slot]`) into `prg_window`.
    pub(crate) fn fill_prg_slot(&mut self, slot: usize) {
        let from = self.prg_map[slot] as usize;
        self.prg_window[slot * 0x2000..(slot + 1) * 0x2000].copy_from_slice(&self.prg_rom[from..from + 0x2000]);
    }

    fn fill_prg_window(&mut self) {
        for slot in 0..4 {
            self.fill_prg_slot(slot);
        }
    }

    /// A hash of the ROM contents; save states carry it.
    pub fn rom_hash(&self) -> u64 {
        self.hash
    }

    pub fn mapper(&self) -> MapperKind {
        self.kind
    }

    pub fn mirroring(&self) -> Mirroring {
        self.mirroring
    }

    /// Console reset: boards without a reset line keep their registers.
    pub fn reset(&mut self) {
        mapper::reset(self);
    }

    /// CPU read of $4020-$FFFF; `None` is open bus.
    #[inline]
    pub fn cpu_read(&self, addr: u16) -> Option<u8> {
        if addr >= 0x8000 {
            Some(self.prg_read(addr))
        } else if addr >= 0x6000 && self.prg_ram_size > 0 && self.prg_ram_enabled {
            Some(self.prg_ram[(addr as usize - 0x6000) % self.prg_ram_size])
        } else {
            None
        }
    }

    /// CPU read of $8000-$FFFF (always PRG ROM).
    #[inline(always)]
    pub(crate) fn prg_read(&self, addr: u16) -> u8 {
        self.prg_window[addr as usize & 0x7fff]
    }

    /// CPU write of $4020-$FFFF. `cycle` is the CPU cycle count (MMC1 needs it).
    #[inline]
    pub fn cpu_write(&mut self, addr: u16, v: u8, cycle: u64) {
        if addr >= 0x8000 {
            mapper::write_register(self, addr, v, cycle);
        } else if addr >= 0x6000 && self.prg_ram_size > 0 && self.prg_ram_enabled && self.prg_ram_writable {
            self.prg_ram[(addr as usize - 0x6000) % self.prg_ram_size] = v;
        }
    }

    /// PPU read of $0000-$3EFF (palette reads never reach the cartridge).
    /// `dot` is the PPU's running dot counter, for boards that time A12 (MMC3).
    #[inline]
    pub fn ppu_read(&mut self, addr: u16, dot: u64) -> u8 {
        self.ppu_addr(addr, dot);
        if addr < 0x2000 {
            let off = self.chr_offset(addr);
            if self.chr_is_ram {
                self.chr_ram[off]
            } else {
                self.chr_rom[off]
            }
        } else {
            self.ciram[self.nametable_offset(addr)]
        }
    }

    /// PPU write of $0000-$3EFF.
    #[inline]
    pub fn ppu_write(&mut self, addr: u16, v: u8, dot: u64) {
        self.ppu_addr(addr, dot);
        if addr < 0x2000 {
            if self.chr_is_ram {
                let off = self.chr_offset(addr);
                self.chr_ram[off] = v;
            }
        } else {
            let off = self.nametable_offset(addr);
            self.ciram[off] = v;
        }
    }

    /// The PPU put `addr` on its address bus (a fetch, or a $2006/$2007 update). MMC3 counts
    /// rising edges of A12 that follow a long enough low period.
    #[inline(always)]
    pub fn ppu_addr(&mut self, addr: u16, dot: u64) {
        if self.kind == MapperKind::Mmc3 {
            mapper::m004_mmc3::watch_a12(self, addr, dot);
        }
    }

    /// Whether the board watches the PPU address bus (MMC3's A12 counter): then every
    /// rendering fetch must really happen, on its dot.
    #[inline(always)]
    pub(crate) fn watches_ppu_bus(&self) -> bool {
        self.kind == MapperKind::Mmc3
    }

    /// The board's IRQ output (active high here; the CPU line is the OR of all sources).
    #[inline]
    pub fn irq(&self) -> bool {
        self.irq_line
    }

    #[inline(always)]
    fn chr_offset(&self, addr: u16) -> usize {
        self.chr_map[(addr >> 10) as usize & 7] as usize + (addr as usize & 0x3ff)
    }

    #[inline(always)]
    fn nametable_offset(&self, addr: u16) -> usize {
        // A table lookup instead of a 5-way match: the PPU does ~17k nametable/attribute
        // fetches a frame (see docs/perf-notes.md, change 1).
        let table = (addr >> 10) as usize & 3;
        NT_PAGE[self.mirroring as usize][table] as usize * 0x400 + (addr as usize & 0x3ff)
    }

    /// The PPU's rendering fetch of a nametable or attribute byte ($2000-$2FFF): same as
    /// `ppu_read`, minus the CHR/CIRAM decision the caller already knows.
    #[inline(always)]
    pub(crate) fn ppu_read_nt(&mut self, addr: u16, dot: u64) -> u8 {
        self.ppu_addr(addr, dot);
        self.ciram[self.nametable_offset(addr)]
    }

    /// The PPU's rendering fetch of a pattern byte ($0000-$1FFF), like `ppu_read`.
    #[inline(always)]
    pub(crate) fn ppu_read_chr(&mut self, addr: u16, dot: u64) -> u8 {
        self.ppu_addr(addr, dot);
        self.chr_peek(addr)
    }

    /// The 1 KiB of nametable RAM the PPU sees at `addr` ($2000-$2FFF), for a run of reads
    /// there without the address on the bus (the caller puts them on it: `ppu_addr`).
    #[inline(always)]
    pub(crate) fn nametable_page(&self, addr: u16) -> &[u8] {
        let base = self.nametable_offset(addr & !0x3ff);
        &self.ciram[base..base + 0x400]
    }

    /// The 1 KiB CHR bank the PPU sees at `addr` ($0000-$1FFF), as `nametable_page` (the
    /// mappers map whole 1 KiB banks: `chr_map` holds multiples of 0x400).
    #[inline(always)]
    pub(crate) fn chr_bank(&self, addr: u16) -> &[u8] {
        let base = self.chr_offset(addr & !0x3ff);
        if self.chr_is_ram {
            let base = base & (CHR_RAM_SIZE - 1);
            &self.chr_ram[base..base + 0x400]
        } else {
            &self.chr_rom[base..base + 0x400]
        }
    }

    /// A side-effect-free read of the nametable byte the PPU would see at `addr` ($2000-$2FFF).
    pub fn nametable_peek(&self, addr: u16) -> u8 {
        self.nametable_page(addr)[addr as usize & 0x3ff]
    }

    /// A side-effect-free read of the pattern byte the PPU would see at `addr` ($0000-$1FFF):
    /// `ppu_read_chr` without the address on the bus.
    #[inline]
    pub(crate) fn chr_peek(&self, addr: u16) -> u8 {
        self.chr_bank(addr)[addr as usize & 0x3ff]
    }

    /// The 2 KiB of console nametable RAM (a debug view for test runners).
    pub fn ciram(&self) -> &[u8] {
        &self.ciram[..0x800]
    }

    /// The board's PRG RAM ($6000-$7FFF), empty when it has none.
    pub fn prg_ram(&self) -> &[u8] {
        &self.prg_ram[..self.prg_ram_size]
    }

    pub(crate) fn prg_len(&self) -> usize {
        self.prg_rom.len()
    }

    pub(crate) fn chr_len(&self) -> usize {
        if self.chr_is_ram {
            CHR_RAM_SIZE
        } else {
            self.chr_rom.len()
        }
    }
}

fn fnv1a_rom(rom: &[u8], h: &Header) -> u64 {
    let end = h.prg_offset() + h.prg_rom + h.chr_rom;
    crate::state::fnv1a(&rom[..end])
}

impl Snapshot for Cart {
    fn save(&self, w: &mut StateWriter<'_>) {
        w.bytes(&self.chr_ram);
        w.bytes(&self.prg_ram);
        w.bytes(&self.ciram);
        w.u8(self.mirroring as u8);
        for &m in &self.prg_map {
            w.u32(m);
        }
        for &m in &self.chr_map {
            w.u32(m);
        }
        w.bytes(&self.regs);
        w.u8(self.latch);
        w.u8(self.latch_count);
        w.bool(self.prg_ram_enabled);
        w.bool(self.prg_ram_writable);
        w.u64(self.last_write_cycle);
        w.u8(self.irq_latch);
        w.u8(self.irq_counter);
        w.bool(self.irq_reload);
        w.bool(self.irq_enabled);
        w.bool(self.irq_line);
        w.bool(self.a12_high);
        w.u64(self.a12_low_since);
    }

    fn load(&mut self, r: &mut StateReader<'_>) -> Result<(), StateError> {
        r.bytes(&mut self.chr_ram)?;
        r.bytes(&mut self.prg_ram)?;
        r.bytes(&mut self.ciram)?;
        self.mirroring = Mirroring::from_u8(r.u8()?).ok_or(StateError::BadField("cart.mirroring"))?;
        for m in &mut self.prg_map {
            *m = r.u32()?;
            // Whole 8 KiB banks, as every mapper sets them: any other offset is no state the
            // console can be in.
            if *m % 0x2000 != 0 || *m as usize + 0x2000 > self.prg_rom.len() {
                return Err(StateError::BadField("cart.prg_map"));
            }
        }
        self.fill_prg_window();
        let chr_len = self.chr_len();
        for m in &mut self.chr_map {
            *m = r.u32()?;
            if *m as usize + 0x400 > chr_len {
                return Err(StateError::BadField("cart.chr_map"));
            }
        }
        r.bytes(&mut self.regs)?;
        self.latch = r.u8()?;
        self.latch_count = r.u8()?;
        // MMC1's shifter holds at most four bits between its five writes (a count past that
        // would shift its bits out of the byte).
        if self.kind == MapperKind::Mmc1 && self.latch_count > 4 {
            return Err(StateError::BadField("cart.latch_count"));
        }
        self.prg_ram_enabled = r.bool()?;
        self.prg_ram_writable = r.bool()?;
        self.last_write_cycle = r.u64()?;
        self.irq_latch = r.u8()?;
        self.irq_counter = r.u8()?;
        self.irq_reload = r.bool()?;
        self.irq_enabled = r.bool()?;
        self.irq_line = r.bool()?;
        self.a12_high = r.bool()?;
        self.a12_low_since = r.u64()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ines(prg_16k: u8, chr_8k: u8, flags6: u8, flags7: u8) -> alloc::vec::Vec<u8> {
        let mut v = alloc::vec![0u8; 16 + prg_16k as usize * 0x4000 + chr_8k as usize * 0x2000];
        v[0..4].copy_from_slice(b"NES\x1a");
        v[4] = prg_16k;
        v[5] = chr_8k;
        v[6] = flags6;
        v[7] = flags7;
        v
    }

    #[test]
    fn an_ines_header_gives_mapper_sizes_and_mirroring() {
        let h = Header::parse(&ines(2, 1, 0x11, 0x00)).unwrap();
        assert_eq!(h.mapper, 1);
        assert_eq!(h.prg_rom, 0x8000);
        assert_eq!(h.chr_rom, 0x2000);
        assert_eq!(h.mirroring, Mirroring::Vertical);
        assert_eq!(h.prg_ram, PRG_RAM_SIZE, "iNES 1.0 always maps 8 KiB of PRG RAM");
        assert!(!h.nes2);
    }

    #[test]
    fn mapper_66_takes_its_high_nibble_from_flags7() {
        let h = Header::parse(&ines(2, 1, 0x20, 0x40)).unwrap();
        assert_eq!(h.mapper, 66);
    }

    #[test]
    fn nes2_maps_exactly_the_prg_ram_it_declares() {
        let mut rom = ines(8, 0, 0x10, 0x08);
        rom[11] = 0x07;
        let h = Header::parse(&rom).unwrap();
        assert!(h.nes2);
        assert_eq!(h.prg_ram, 0);
        assert_eq!(h.chr_ram, 0x2000);
    }

    #[test]
    fn a_trainer_loads_at_7000_in_prg_ram() {
        let mut rom = ines(1, 1, 0x04, 0);
        let trainer: alloc::vec::Vec<u8> = (0..512).map(|i| (i * 7 + 1) as u8).collect();
        rom.splice(16..16, trainer.iter().copied());
        let cart = Cart::from_ines(&rom).unwrap();
        assert_eq!(&cart.prg_ram()[0x1000..0x1200], &trainer[..]);
        assert_eq!(cart.cpu_read(0x7000), Some(1));
        assert_eq!(cart.cpu_read(0x71ff), Some(trainer[511]));
        assert!(cart.prg_ram()[..0x1000].iter().chain(&cart.prg_ram()[0x1200..]).all(|&b| b == 0));
        let console = crate::console::Console::new(&rom).unwrap();
        assert_eq!(console.peek(0x7000), 1, "a powered-on console has it too");
        // NES 2.0 can declare less PRG RAM than $7000-$71FF needs.
        rom[7] = 0x08;
        rom[10] = 0x07; // 8 KiB shifted: 64 << 7
        assert!(Cart::from_ines(&rom).is_ok());
        rom[10] = 0x06; // 4 KiB
        assert!(matches!(Cart::from_ines(&rom), Err(RomError::UnsupportedSize { bytes: 0x1000, .. })));
    }

    #[test]
    fn bad_roms_are_typed_errors() {
        assert_eq!(Header::parse(b"NES"), Err(RomError::TooShort { len: 3 }));
        assert_eq!(Header::parse(&[0u8; 32]), Err(RomError::BadMagic));
        let mut short = ines(2, 1, 0, 0);
        short.truncate(1000);
        assert!(matches!(Header::parse(&short), Err(RomError::Truncated { .. })));
        assert_eq!(Header::parse(&ines(0, 1, 0, 0)), Err(RomError::NoPrgRom));
        assert_eq!(Header::parse(&ines(2, 1, 0x50, 0)), Err(RomError::UnsupportedMapper { mapper: 5 }));
    }

    #[test]
    fn nrom_128_mirrors_its_bank_at_c000() {
        let mut rom = ines(1, 1, 0, 0);
        rom[16] = 0xab;
        let cart = Cart::from_ines(&rom).unwrap();
        assert_eq!(cart.cpu_read(0x8000), Some(0xab));
        assert_eq!(cart.cpu_read(0xc000), Some(0xab));
    }

    #[test]
    fn horizontal_mirroring_pairs_2000_with_2400() {
        let mut cart = Cart::from_ines(&ines(1, 1, 0, 0)).unwrap();
        cart.ppu_write(0x2005, 0x55, 0);
        assert_eq!(cart.ppu_read(0x2405, 0), 0x55);
        assert_ne!(cart.ppu_read(0x2805, 0), 0x55);
    }
}
