//! The host twin: the kernels' sources built as C++ for the CPU (`nesle_host_*`, linked
//! statically by build.rs), which the parity tests run against nes-core. Each call packs the
//! states as a GPU batch packs them, so those tests cover the packing too.

use crate::packed::Packing;
use crate::picture::{GrayTables, RgbTable, GRAY_PIXELS};
use crate::{FlatState, RomImage, PIXELS_PER_ENV};

extern "C" {
    fn nesle_host_step(
        states: *mut u8,
        stride: u32,
        packing: u32,
        prg: *const u8,
        code: *const u32,
        chr: *const u8,
        actions: *const u8,
        n_envs: u32,
        frames: u32,
        pixels: *mut u8,
        order: *const u32,
        ran: *mut u32,
        lines: *mut u8,
        queue: *mut u32,
    );
    fn nesle_host_draw_lines(
        states: *const u8,
        snapshot: *mut u8,
        stride: u32,
        packing: u32,
        prg: *const u8,
        code: *const u32,
        chr: *const u8,
        actions: *const u8,
        logs: *mut u8,
        pixels: *mut u8,
        n_envs: u32,
        queue: *const u32,
        tables: *const GrayTables,
        gray: *mut u8,
    ) -> u32;
    fn nesle_host_gray84_redrawn(
        pixels: *const u8,
        logs: *const u8,
        tables: *const GrayTables,
        gray: *mut u8,
        n_envs: u32,
    );
    fn nesle_host_code_words(prg: *const u8, len: u32, out: *mut u32);
    fn nesle_host_state_size() -> u32;
    #[cfg(test)]
    fn nesle_host_line_log_size() -> u32;
    fn nesle_host_gray84(pixels: *const u8, tables: *const GrayTables, out: *mut u8, n_envs: u32);
    fn nesle_host_rgb(pixels: *const u8, table: *const RgbTable, out: *mut u8, quads: u64);
    fn nesle_host_cpu_step(state: *mut FlatState, prg: *const u8, code: *const u32, chr: *const u8);
    fn nesle_host_ppu_run(
        state: *mut FlatState,
        prg: *const u8,
        code: *const u32,
        chr: *const u8,
        dots: u32,
        one_by_one: u32,
        pixels: *mut u8,
    );
    fn nesle_host_status_bound(state: *const FlatState, prg: *const u8, code: *const u32, chr: *const u8) -> u32;
    fn nesle_host_replay_check(
        state: *mut FlatState,
        prg: *const u8,
        code: *const u32,
        chr: *const u8,
        reference: *mut u8,
        replayed: *mut u8,
    ) -> i32;
    #[cfg(test)]
    fn nesle_host_lines_vert_check() -> u32;
    #[cfg(test)]
    fn nesle_host_write_ram(
        states: *mut u8,
        stride: u32,
        mask: *const u8,
        values: *const u32,
        value: u32,
        addr: u32,
        n_envs: u32,
    );
    #[cfg(test)]
    fn nesle_host_order(ran: *const u32, pairs: *mut u64, order: *mut u32, n: u32, padded: u32, tile: u32);
}

/// Runs the host build of `nesle_step` over `states` packed as a GPU batch packs them (so the
/// parity tests cover the packing too), then unpacks them. The caller has checked lengths,
/// that every state belongs to `rom` and that `order`, if given, is a permutation of the envs;
/// `ran`, if given, receives each env's regrouping key (its instructions in its last frame << 16
/// | the PC that frame ended at).
pub(crate) fn host_step(
    states: &mut [FlatState],
    rom: &RomImage,
    actions: &[u8],
    order: Option<&[u32]>,
    frames: u32,
    pixels: Option<&mut [u8]>,
    ran: Option<&mut [u32]>,
) {
    let Some(first) = states.first() else { return };
    let packing = Packing::of(first);
    let mut packed = packing.pack_all(states);
    host_step_packed(&mut packed, packing, states.len(), rom, actions, order, frames, pixels, ran, None, None);
    unpack_into(states, packing, &packed);
}

/// `rom`'s CHR ROM for the C++ code: null for a board with CHR RAM.
fn host_chr(rom: &RomImage) -> *const u8 {
    if rom.chr.is_empty() {
        std::ptr::null()
    } else {
        rom.chr.as_ptr()
    }
}

/// The states packed in `packed` (by `packing`) back into `states`.
fn unpack_into(states: &mut [FlatState], packing: Packing, packed: &[u8]) {
    for (s, p) in states.iter_mut().zip(packing.unpack_all(packed)) {
        *s = p;
    }
}

/// kernels/console_types.cuh's `LineLog`: the bytes of one env's record of a drawn frame.
pub(crate) const LINE_LOG_BYTES: usize = 2040;
/// Where `LineLog::flags` (a little-endian u32) lies in one, and its LINES_REDRAW bit.
pub(crate) const LINE_LOG_FLAGS_AT: usize = 20;
pub(crate) const LINES_REDRAW: u32 = 2;

/// [`host_step`] with the picture drawn after the last frame, line by line, as
/// `BatchConfig::draw_lines` makes the GPU draw it: the frames before the last, a copy of the
/// states, the last frame run undrawn with its LineLogs, then `nesle_host_draw_lines` (which
/// redraws from the copy the frames it cannot draw). With `gray` (n 84x84 pictures), the line
/// renderer makes the 84x84 picture of each env it draws, then `nesle_host_gray84_redrawn`
/// those of the redrawn ones, as `Batch::step_gray84` does. Returns the envs drawn line by line.
pub(crate) fn host_step_lines(
    states: &mut [FlatState],
    rom: &RomImage,
    actions: &[u8],
    frames: u32,
    pixels: &mut [u8],
    mut gray: Option<&mut [u8]>,
) -> u32 {
    let Some(first) = states.first() else { return 0 };
    if frames == 0 {
        return 0;
    }
    let n = states.len();
    let packing = Packing::of(first);
    let mut packed = packing.pack_all(states);
    host_step_packed(&mut packed, packing, n, rom, actions, None, frames - 1, None, None, None, None);
    let mut snapshot = packed.clone();
    let mut logs = vec![0u8; n * LINE_LOG_BYTES];
    // The order in which the last frame's envs ended, as the GPU's line renderer takes them.
    let mut queue = vec![0u32; n + 3];
    host_step_packed(&mut packed, packing, n, rom, actions, None, 1, None, None, Some(&mut logs), Some(&mut queue));
    let chr = host_chr(rom);
    assert_eq!(pixels.len(), n * PIXELS_PER_ENV, "checked by the caller");
    // SAFETY: `packed` and `snapshot` hold n states packed by `packing` (the states after and
    // before the last frame), `logs` n LineLogs that frame's step filled (LINE_LOG_BYTES each,
    // pinned against sizeof(LineLog) by `line_log_size_matches`), `actions` n bytes, `pixels` n
    // pictures (asserted), `queue` n + 3 words that step filled (a slot left empty is skipped),
    // `prg`/`chr` the ROM the states were built for, `gray` null or n 84x84 pictures (asserted)
    // with `tables` one GrayTables; the C++ code keeps no pointer.
    let tables = GrayTables::new();
    if let Some(g) = &gray {
        assert_eq!(g.len(), n * GRAY_PIXELS, "checked by the caller");
    }
    let gray_ptr = gray.as_mut().map_or(std::ptr::null_mut(), |g| g.as_mut_ptr());
    let drawn = unsafe {
        nesle_host_draw_lines(
            packed.as_ptr(),
            snapshot.as_mut_ptr(),
            packing.stride() as u32,
            packing.bits(),
            rom.prg.as_ptr(),
            rom.code().as_ptr(),
            chr,
            actions.as_ptr(),
            logs.as_mut_ptr(),
            pixels.as_mut_ptr(),
            n as u32,
            queue.as_ptr(),
            &tables,
            gray_ptr,
        )
    };
    if !gray_ptr.is_null() {
        // SAFETY: `pixels` n pictures, `logs` the n LineLogs the draw above flagged, `gray` n
        // 84x84 pictures (asserted), `tables` one GrayTables; no pointer kept.
        unsafe { nesle_host_gray84_redrawn(pixels.as_ptr(), logs.as_ptr(), &tables, gray_ptr, n as u32) };
    }
    unpack_into(states, packing, &packed);
    drawn
}

/// `nesle_host_step` over `n` packed states; `lines`, if given, n LineLogs for the last frame.
#[allow(clippy::too_many_arguments)]
fn host_step_packed(
    packed: &mut [u8],
    packing: Packing,
    n: usize,
    rom: &RomImage,
    actions: &[u8],
    order: Option<&[u32]>,
    frames: u32,
    pixels: Option<&mut [u8]>,
    ran: Option<&mut [u32]>,
    lines: Option<&mut [u8]>,
    queue: Option<&mut [u32]>,
) {
    debug_assert_eq!(actions.len(), n);
    debug_assert_eq!(packed.len(), n * packing.stride());
    // An order of fewer than n envs runs those only (Batch::step_masked), a slot each.
    debug_assert!(order.is_none_or(|o| o.len() <= n));
    let slots = order.map_or(n, |o| o.len());
    debug_assert!(ran.as_ref().is_none_or(|r| r.len() == n));
    debug_assert!(lines.as_ref().is_none_or(|l| l.len() == n * LINE_LOG_BYTES));
    debug_assert!(queue.as_ref().is_none_or(|q| q.len() == n + 3));
    let px = match pixels {
        Some(p) => {
            debug_assert_eq!(p.len(), n * PIXELS_PER_ENV);
            p.as_mut_ptr()
        }
        None => std::ptr::null_mut(),
    };
    let chr = host_chr(rom);
    // SAFETY: `packed` holds n packed states of `packing.stride()` bytes, laid out as
    // kernels/console.cuh's nes_convert reads them (packed.rs, the same regions in the same
    // order; FlatState's C twin is generated from the same field table, sizes pinned by
    // static_asserts on both sides). `actions` has n bytes, `pixels` n*256*240 bytes or is
    // null, `order` is null, a permutation of 0..n or `slots` distinct envs below n (checked
    // by the caller; the C++ code's `n_envs` counts slots, its buffers are indexed by env),
    // `ran` null or n counts, `lines` null or n LineLogs, `queue` null or n + 3 zeroed words,
    // `prg`/`chr` are the ROM images the states' banking maps were built for (each state's maps
    // index inside them: the caller's states are what nes-core loads, `host::check_inputs`). The
    // C++ code does not retain any pointer after returning.
    unsafe {
        nesle_host_step(
            packed.as_mut_ptr(),
            packing.stride() as u32,
            packing.bits(),
            rom.prg.as_ptr(),
            rom.code().as_ptr(),
            chr,
            actions.as_ptr(),
            slots as u32,
            frames,
            px,
            order.map_or(std::ptr::null(), |o| o.as_ptr()),
            ran.map_or(std::ptr::null_mut(), |r| r.as_mut_ptr()),
            lines.map_or(std::ptr::null_mut(), |l| l.as_mut_ptr()),
            queue.map_or(std::ptr::null_mut(), |q| q.as_mut_ptr()),
        );
    }
}

/// Runs the host build of the grayscale picture (kernels/picture.cuh) over whole pictures.
pub(crate) fn host_gray84(pixels: &[u8], tables: &GrayTables, out: &mut [u8]) {
    let n = pixels.len() / PIXELS_PER_ENV;
    assert!(pixels.len() == n * PIXELS_PER_ENV && out.len() == n * GRAY_PIXELS, "checked by the caller");
    // SAFETY: GrayTables is #[repr(C)] with the C struct's layout (sizes asserted on both
    // sides); `pixels` holds n pictures of 256x240 bytes and `out` n of 84x84 (asserted above),
    // the only ranges the C++ code touches; it keeps no pointer.
    unsafe { nesle_host_gray84(pixels.as_ptr(), tables, out.as_mut_ptr(), n as u32) }
}

/// Runs the host build of the RGB picture (kernels/picture.cuh `nesle_rgb`) over whole pictures.
pub(crate) fn host_rgb(pixels: &[u8], table: &RgbTable, out: &mut [u8]) {
    assert!(pixels.len() % PIXELS_PER_ENV == 0 && out.len() == pixels.len() * 3, "checked by the caller");
    // SAFETY: RgbTable is #[repr(C)], 64 words as the C struct (sizes asserted on both sides);
    // `pixels` holds whole pictures, a multiple of 4 bytes, and `out` three bytes for each of
    // them (asserted above), the only ranges the C++ code touches; it keeps no pointer.
    unsafe { nesle_host_rgb(pixels.as_ptr(), table, out.as_mut_ptr(), (pixels.len() / 4) as u64) }
}

/// The code words of a PRG ROM image (kernels/quiet.cuh `cpu_code_word`), one per byte, then
/// 8 KiB of QF_NONE words (0), where the kernels' fetch looks for an address below $8000
/// (console_types.cuh `Nes::code_bank`).
pub(crate) fn code_words(prg: &[u8]) -> Vec<u32> {
    let mut out = vec![0u32; prg.len() + 0x2000];
    // SAFETY: `prg` holds `prg.len()` bytes and `out` more than as many words: the C++ code
    // reads the bytes and writes the first `prg.len()` words (the rest stay QF_NONE); it keeps
    // no pointer. PRG ROM images are at most a few MiB (u32 length).
    unsafe { nesle_host_code_words(prg.as_ptr(), prg.len() as u32, out.as_mut_ptr()) };
    out
}

pub(crate) fn host_state_size() -> usize {
    // SAFETY: a pure function of no arguments returning sizeof(FlatState).
    unsafe { nesle_host_state_size() as usize }
}

/// One CPU step of the host build (debugging aid for parity failures).
pub(crate) fn host_cpu_step(state: &mut FlatState, rom: &RomImage) {
    let chr = host_chr(rom);
    // SAFETY: as in `host_step`, for one state; the caller checked it belongs to `rom`.
    unsafe { nesle_host_cpu_step(state, rom.prg.as_ptr(), rom.code().as_ptr(), chr) }
}

/// `dots` PPU dots of one console through the host build's catch-up (`ppu_run`) or, with
/// `one_by_one`, dot by dot (`ppu_tick`).
pub(crate) fn host_ppu_run(
    state: &mut FlatState,
    rom: &RomImage,
    dots: u32,
    one_by_one: bool,
    pixels: Option<&mut [u8]>,
) {
    let chr = host_chr(rom);
    let px = match pixels {
        Some(p) => {
            assert_eq!(p.len(), PIXELS_PER_ENV, "checked by the caller");
            p.as_mut_ptr()
        }
        None => std::ptr::null_mut(),
    };
    // SAFETY: as in `host_step`, for one unpacked state (the caller checked it belongs to
    // `rom`); `pixels` is null or one 256x240 picture, the only range the C++ code writes.
    unsafe { nesle_host_ppu_run(state, rom.prg.as_ptr(), rom.code().as_ptr(), chr, dots, one_by_one as u32, px) }
}

/// The host build of the device's regrouping sort (kernels/order.cuh), with the device's
/// schedule and tiles of `tile` pairs (a power of two; the device's is `ORDER_TILE`): the envs
/// in order of `ran`, the most first, ties in env order.
#[cfg(test)]
pub(crate) fn host_order(ran: &[u32], tile: usize) -> Vec<u32> {
    assert!(tile.is_power_of_two(), "tile {tile}");
    let n = ran.len();
    let padded = n.next_power_of_two();
    let mut pairs = vec![0u64; padded];
    let mut order = vec![0u32; n];
    // SAFETY: `ran` and `order` hold n entries and `pairs` padded ones, as nesle_host_order
    // reads and writes them (tiles of a power of two divide `padded` or hold all of it); it
    // keeps no pointer.
    unsafe {
        nesle_host_order(ran.as_ptr(), pairs.as_mut_ptr(), order.as_mut_ptr(), n as u32, padded as u32, tile as u32)
    };
    order
}

/// The host build of `nesle_write_ram` over `packed` (states of `stride` bytes): RAM byte
/// `addr` of env i becomes `values[i]`, or `value` with no `values`, where `mask[i] != 0`.
#[cfg(test)]
pub(crate) fn host_write_ram(
    packed: &mut [u8],
    stride: usize,
    mask: &[u8],
    values: Option<&[u32]>,
    value: u8,
    addr: usize,
) {
    let n = mask.len();
    assert!(packed.len() == n * stride && values.is_none_or(|v| v.len() == n) && addr < 0x800);
    let values = values.map_or(std::ptr::null(), <[u32]>::as_ptr);
    // SAFETY: `packed` holds n states of `stride` bytes, `mask` (and `values`, if given) n
    // entries, and addr < 2048 keeps each write inside an env's RAM; it keeps no pointer.
    unsafe {
        nesle_host_write_ram(
            packed.as_mut_ptr(),
            stride as u32,
            mask.as_ptr(),
            values,
            u32::from(value),
            addr as u32,
            n as u32,
        )
    };
}

/// How many of the 32,768 values of `v` the line renderer's closed form of the frame's 240
/// fine Y steps (kernels/lines.cuh `lines_vert_after_frame`) gets wrong.
#[cfg(test)]
pub(crate) fn host_lines_vert_check() -> u32 {
    // SAFETY: takes and keeps nothing.
    unsafe { nesle_host_lines_vert_check() }
}

/// One frame of `state` drawn as the step kernel draws it and drawn by replaying its logged PPU
/// accesses (kernels/replay.cuh); `state` goes on by the frame. Returns the events logged, or
/// -1 (log overflow), -2 (the logged run ended elsewhere than the drawn one).
pub(crate) fn host_replay_check(
    state: &mut FlatState,
    rom: &RomImage,
    reference: &mut [u8],
    replayed: &mut [u8],
) -> i32 {
    assert!(reference.len() == crate::PIXELS_PER_ENV && replayed.len() == crate::PIXELS_PER_ENV);
    let chr = host_chr(rom);
    // SAFETY: one unpacked state of this ROM (the caller's), two 256x240 pictures; the C++ code
    // keeps no pointer.
    unsafe {
        nesle_host_replay_check(
            state,
            rom.prg.as_ptr(),
            rom.code().as_ptr(),
            chr,
            reference.as_mut_ptr(),
            replayed.as_mut_ptr(),
        )
    }
}

/// The host build's `ppu_dots_to_status_change` for one console.
pub(crate) fn host_status_bound(state: &FlatState, rom: &RomImage) -> u32 {
    let chr = host_chr(rom);
    // SAFETY: as in `host_step`, for one unpacked state (the caller checked it belongs to
    // `rom`); the C++ code reads a copy of it and writes nothing.
    unsafe { nesle_host_status_bound(state, rom.prg.as_ptr(), rom.code().as_ptr(), chr) }
}

#[cfg(test)]
mod tests {
    use super::host_lines_vert_check;

    #[test]
    fn the_line_renderers_frame_of_fine_y_steps_in_one_is_the_240_steps() {
        assert_eq!(host_lines_vert_check(), 0);
    }

    #[test]
    fn line_log_size_matches() {
        // SAFETY: a pure function of no arguments returning sizeof(LineLog).
        assert_eq!(unsafe { super::nesle_host_line_log_size() } as usize, super::LINE_LOG_BYTES);
    }
}
