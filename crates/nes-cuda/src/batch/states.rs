//! A batch's states as the host changes or reads them: one env's state saved and loaded, the
//! bank of start states and masked resets from it, and RAM writes (a game's pokes between
//! frames), the last two run on the device.

use super::{loadable, Batch};
use crate::launch::host_zeros;
use crate::{Error, FlatState};
use cudarc::driver::CudaSlice;

impl Batch {
    fn loadable(&self, state: &FlatState) -> Result<FlatState, Error> {
        loadable(&self.rom, self.packing, state)
    }

    fn check_env(&self, i: usize) -> Result<(), Error> {
        if i >= self.n_envs {
            return Err(Error::BadArgument(format!("env {i} of {}", self.n_envs)));
        }
        Ok(())
    }

    /// Env `i`'s state.
    pub fn save_state(&self, i: usize) -> Result<FlatState, Error> {
        self.check_env(i)?;
        let stride = self.packing.stride();
        let mut packed = vec![0u8; stride];
        self.gpu.download(&self.states, i * stride, &mut packed)?;
        Ok(self.packing.unpack(&packed))
    }

    /// Puts env `i` in `state` as nes-core loads it (validated against this ROM first).
    pub fn load_state(&mut self, i: usize, state: &FlatState) -> Result<(), Error> {
        self.check_env(i)?;
        let state = self.loadable(state)?;
        self.gpu.upload(
            &self.packing.pack_all(std::slice::from_ref(&state)),
            &mut self.states,
            i * self.packing.stride(),
        )?;
        self.gpu.synchronize()
    }

    /// Uploads the bank of start states that [`Batch::reset_masked`] copies from, each as
    /// nes-core loads it.
    pub fn set_bank(&mut self, bank: &[FlatState]) -> Result<(), Error> {
        if bank.is_empty() {
            return Err(Error::BadArgument("empty reset bank".into()));
        }
        // Packed one by one: a bank may hold a state for each of many thousand envs.
        let stride = self.packing.stride();
        // Fallible: a bank of many thousand states is a HostMemory error, not an abort.
        let mut packed = host_zeros(bank.len().saturating_mul(stride))?;
        for (state, chunk) in bank.iter().zip(packed.chunks_exact_mut(stride)) {
            self.packing.pack(&self.loadable(state)?, chunk);
        }
        let mut buf = self.gpu.alloc(packed.len())?;
        self.gpu.upload(&packed, &mut buf, 0)?;
        self.bank = Some((buf, bank.len()));
        Ok(())
    }

    /// Env i takes bank state `pick[i]` (default `i % bank.len()`) where `mask[i] != 0`. A pick
    /// past the bank for a masked env is refused before anything changes (the host can see it
    /// here; [`Batch::reset_masked_device`] cannot without a synchronization). Runs on the
    /// device, queued after earlier steps.
    pub fn reset_masked(&mut self, mask: &[u8], pick: Option<&[u32]>) -> Result<(), Error> {
        if mask.len() != self.n_envs || pick.is_some_and(|p| p.len() != self.n_envs) {
            return Err(Error::BadArgument("mask and pick need one entry per env".into()));
        }
        let Some((bank, bank_len)) = &self.bank else {
            return Err(Error::BadArgument("reset_masked needs set_bank first".into()));
        };
        let picks: Vec<u32> = match pick {
            Some(p) => {
                check_picks(mask, p, *bank_len)?;
                p.to_vec()
            }
            None => (0..self.n_envs).map(|i| (i % bank_len) as u32).collect(),
        };
        self.gpu.upload(mask, &mut self.mask, 0)?;
        self.gpu.stream.memcpy_htod(&picks, &mut self.pick).map_err(|e| Error::Cuda(format!("{e:?}")))?;
        self.gpu.reset_from_bank(&mut self.states, bank, *bank_len, &self.mask, &self.pick, self.n_envs, self.packing)
    }

    /// Env i takes bank state `pick[i]` where `mask[i] != 0`, both on the device (`n_envs`
    /// bytes of 0/1, `n_envs` u32; a pick past the bank leaves the env as it is). Nothing
    /// crosses to the host: the device-resident auto-reset.
    pub fn reset_masked_device(&mut self, mask: &CudaSlice<u8>, pick: &CudaSlice<u32>) -> Result<(), Error> {
        let Some((bank, bank_len)) = &self.bank else {
            return Err(Error::BadArgument("reset_masked_device needs set_bank first".into()));
        };
        if pick.len() < self.n_envs {
            return Err(Error::BadArgument(format!("{} picks for {} envs", pick.len(), self.n_envs)));
        }
        self.gpu.reset_from_bank(&mut self.states, bank, *bank_len, mask, pick, self.n_envs, self.packing)
    }

    /// RAM byte `addr` (below 2048) of every env where `mask[i] != 0` becomes `value`, on the
    /// device: the states stay there (a game's RAM writes between frames, e.g. gym-super-mario-
    /// bros' timer cut before each skipped frame). Queued after earlier steps.
    pub fn write_ram(&mut self, addr: usize, value: u8, mask: &[u8]) -> Result<(), Error> {
        self.write_ram_with(addr, mask, None, value)
    }

    /// As [`Batch::write_ram`], env i's byte `values[i]` (e.g. a reset's RNG seed, its own for
    /// each env).
    pub fn write_ram_each(&mut self, addr: usize, values: &[u8], mask: &[u8]) -> Result<(), Error> {
        self.write_ram_with(addr, mask, Some(values), 0)
    }

    /// `values`: a byte per env, or `value` for all.
    fn write_ram_with(&mut self, addr: usize, mask: &[u8], values: Option<&[u8]>, value: u8) -> Result<(), Error> {
        if !check_ram_write(self.n_envs, addr, mask, values)? {
            return Ok(());
        }
        self.gpu.upload(mask, &mut self.mask, 0)?;
        if let Some(each) = values {
            // A word each, in the reset's pick buffer: the stream orders its uses.
            let words: Vec<u32> = each.iter().map(|&v| u32::from(v)).collect();
            self.gpu.stream.memcpy_htod(&words, &mut self.pick).map_err(|e| Error::Cuda(format!("{e:?}")))?;
        }
        let words = values.map(|_| &self.pick);
        self.gpu.write_ram(&mut self.states, &self.mask, words, value, addr, self.n_envs, self.packing)
    }
}

/// The first masked env whose pick lies past a bank of `bank_len` states, as an error.
fn check_picks(mask: &[u8], pick: &[u32], bank_len: usize) -> Result<(), Error> {
    match mask.iter().zip(pick).position(|(&m, &p)| m != 0 && p as usize >= bank_len) {
        Some(i) => Err(Error::BadArgument(format!("env {i} picks start state {} of a bank of {bank_len}", pick[i]))),
        None => Ok(()),
    }
}

/// A RAM write's arguments checked for `n_envs` envs (a mask and any values an entry each, the
/// address inside the 2 KiB of RAM); whether any env is masked.
fn check_ram_write(n_envs: usize, addr: usize, mask: &[u8], values: Option<&[u8]>) -> Result<bool, Error> {
    if mask.len() != n_envs || values.is_some_and(|v| v.len() != n_envs) {
        let values = values.map_or(String::new(), |v| format!(" and {} values", v.len()));
        return Err(Error::BadArgument(format!("a mask of {}{values} for {n_envs} envs", mask.len())));
    }
    if addr >= 0x800 {
        return Err(Error::BadArgument(format!("RAM address {addr} past 2047")));
    }
    Ok(mask.iter().any(|&m| m != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_masked_env_picking_past_the_bank_is_refused_and_an_unmasked_one_is_not() {
        assert!(check_picks(&[1, 1, 0], &[0, 2, 9], 3).is_ok(), "env 2 is not reset: its pick is unused");
        let err = check_picks(&[1, 1, 0], &[0, 3, 0], 3).unwrap_err();
        assert!(matches!(&err, Error::BadArgument(why) if why.contains("env 1") && why.contains("bank of 3")), "{err}");
        assert!(check_picks(&[0, 0], &[u32::MAX, 5], 1).is_ok());
        assert!(check_picks(&[0, 7], &[0, u32::MAX], 1).is_err(), "any nonzero byte masks");
    }

    #[test]
    fn a_ram_write_needs_an_entry_per_env_and_an_address_inside_ram() {
        assert!(check_ram_write(3, 0x7FF, &[0, 2, 0], None).unwrap(), "any nonzero byte masks");
        assert!(!check_ram_write(3, 0, &[0, 0, 0], Some(&[1, 2, 3])).unwrap(), "nothing to write");
        for (addr, mask, values, why) in [
            (0x800, &[1u8, 1, 1][..], None, "address 2048 past 2047"),
            (0, &[1, 1][..], None, "a mask of 2 for 3 envs"),
            (0, &[1, 1, 1][..], Some(&[0u8, 0][..]), "a mask of 3 and 2 values for 3 envs"),
        ] {
            let err = check_ram_write(3, addr, mask, values).unwrap_err();
            assert!(matches!(&err, Error::BadArgument(w) if w.contains(why)), "{err}");
        }
    }
}
