//! Gubernator's loops on the virtual clock: a peer's batch and GLOBAL
//! loops (sleep, tick, pump), the messages between peers and the owner's
//! decisions. Split from the strategy's setup (`mod.rs`) for length; the
//! same `impl`.

use super::*;

impl Gubernator {
    pub(super) fn set_peers(&mut self, n: usize) {
        self.n = n;
        self.ring = match self.owner_rule {
            OwnerRule::Ring => owner_ring(n.max(1)),
            OwnerRule::Modulo => Vec::new(),
        };
        self.caches.resize_with(n, FastMap::default);
        self.peak.resize(n, 0);
    }

    pub(super) fn schedule(&mut self, t: Nanos, ev: Ev) -> u64 {
        self.seq += 1;
        self.timers.push(Reverse((t, ev.class(), self.seq, ev)));
        self.seq
    }

    /// The loop `id`, made on first use.
    pub(super) fn lp(&mut self, id: LoopId) -> &mut Loop {
        let eras = &mut self.eras;
        self.loops.entry(id).or_insert_with(|| {
            *eras += 1;
            Loop::new(*eras)
        })
    }

    pub(super) fn wait_of(&self, id: LoopId) -> Nanos {
        match id.1 {
            LoopKind::Batch(_) => self.batch_wait,
            _ => self.sync_wait,
        }
    }

    /// `Interval.Next` (interval.go:67-72).
    pub(super) fn next(&mut self, id: LoopId, t: Nanos) {
        let d = self.wait_of(id);
        let lp = self.lp(id);
        if lp.queued_next {
            return;
        }
        if lp.runner == Runner::Idle {
            self.seq += 1;
            let s = self.seq;
            self.retag(id, t + d, s);
        } else {
            lp.queued_next = true;
        }
    }

    /// The loop's interval sleeps until `until`; its tick event carries
    /// `seq` (a tick whose loop no longer sleeps with it is void).
    pub(super) fn retag(&mut self, id: LoopId, until: Nanos, seq: u64) {
        let era = self.lp(id).era;
        self.timers
            .push(Reverse((until, 1, seq, Ev::Tick(id, era, seq))));
        self.lp(id).runner = Runner::Sleeping(until, seq);
    }

    /// The interval's sleep ends at `at` (interval.go:52-53).
    pub(super) fn sleep_ends(&mut self, id: LoopId, at: Nanos, env: &mut Env) -> Result<()> {
        let lp = self.lp(id);
        if lp.tick {
            lp.runner = Runner::Blocked;
        } else {
            lp.tick = true;
            lp.runner = Runner::Idle;
            self.restart_sleep(id, at);
        }
        self.pump(id, at, env)
    }

    /// The runner takes a queued `Next` and sleeps again from `t`.
    pub(super) fn restart_sleep(&mut self, id: LoopId, t: Nanos) {
        let lp = self.lp(id);
        if lp.runner == Runner::Idle && lp.queued_next {
            lp.queued_next = false;
            let d = self.wait_of(id);
            self.seq += 1;
            let s = self.seq;
            self.retag(id, t + d, s);
        }
    }

    /// The loop reads its tick slot at `t`.
    pub(super) fn take_tick(&mut self, id: LoopId, t: Nanos) {
        let lp = self.lp(id);
        lp.tick = false;
        if lp.runner == Runner::Blocked {
            // The blocked send completes: the slot is full again.
            lp.tick = true;
            lp.runner = Runner::Idle;
            self.restart_sleep(id, t);
        }
    }

    /// A tick of `id` due exactly at `t` goes first with probability 1/2
    /// under `TieOrder::Random` (Go's `select` among ready cases).
    pub(super) fn maybe_tick_first(&mut self, id: LoopId, t: Nanos, env: &mut Env) -> Result<()> {
        if self.tie != TieOrder::Random {
            return Ok(());
        }
        let due = matches!(self.loops.get(&id), Some(lp) if !lp.busy && matches!(lp.runner, Runner::Sleeping(u, _) if u == t));
        if due && env.net.coin() {
            self.sleep_ends(id, t, env)?;
        }
        Ok(())
    }

    /// A request reaches loop `id`'s channel at `t`.
    pub(super) fn arrive(&mut self, id: LoopId, m: Msg, t: Nanos, env: &mut Env) -> Result<()> {
        self.lp(id).chan.push_back(m);
        self.pump(id, t, env)
    }

    /// The loop's `select`, as long as it is not waiting for replies.
    pub(super) fn pump(&mut self, id: LoopId, t: Nanos, env: &mut Env) -> Result<()> {
        loop {
            let tie = self.tie;
            let lp = self.lp(id);
            if lp.busy {
                return Ok(());
            }
            let take_chan = match (!lp.chan.is_empty(), lp.tick) {
                (false, false) => return Ok(()),
                (true, false) => true,
                (false, true) => false,
                (true, true) => tie == TieOrder::ArrivalsFirst || !env.net.coin(),
            };
            if take_chan {
                let Some(m) = self.lp(id).chan.pop_front() else {
                    return Ok(());
                };
                self.receive(id, m, t, env)?;
            } else {
                self.take_tick(id, t);
                self.on_tick(id, t, env)?;
            }
        }
    }

    /// The loop handles one request from its channel.
    pub(super) fn receive(&mut self, id: LoopId, m: Msg, t: Nanos, env: &mut Env) -> Result<()> {
        let (gl, bl) = (self.global_batch_limit, self.batch_limit);
        let lp = self.lp(id);
        let len = match id.1 {
            LoopKind::Hits => {
                // global.go:109-122: the first hit's request is kept.
                match lp.at_key.get(&m.key) {
                    Some(&i) => lp.agg[i].hits += m.hits,
                    None => {
                        lp.at_key.insert(m.key, lp.agg.len());
                        lp.agg.push(m);
                    }
                }
                let len = lp.agg.len();
                if len == gl {
                    return self.send_hits(id.0, t, env);
                }
                len
            }
            LoopKind::Broadcast => {
                // global.go:212: the last update of a key replaces it.
                match lp.at_key.get(&m.key) {
                    Some(&i) => lp.agg[i] = m,
                    None => {
                        lp.at_key.insert(m.key, lp.agg.len());
                        lp.agg.push(m);
                    }
                }
                let len = lp.agg.len();
                if len >= gl {
                    return self.broadcast(id.0, t, env);
                }
                len
            }
            LoopKind::Batch(o) => {
                lp.queue.push(m);
                let len = lp.queue.len();
                if len >= bl {
                    return self.send_batch(id.0, o, t, env);
                }
                len
            }
        };
        if len == 1 {
            self.next(id, t);
        }
        Ok(())
    }

    /// The loop's tick.
    pub(super) fn on_tick(&mut self, id: LoopId, t: Nanos, env: &mut Env) -> Result<()> {
        let lp = self.lp(id);
        match id.1 {
            LoopKind::Hits if !lp.agg.is_empty() => self.send_hits(id.0, t, env),
            LoopKind::Broadcast if !lp.agg.is_empty() => self.broadcast(id.0, t, env),
            LoopKind::Batch(o) if !lp.queue.is_empty() => self.send_batch(id.0, o, t, env),
            _ => Ok(()),
        }
    }

    /// A round trip between a non-owner `p` and an owner: its time, or
    /// `None` when the message is lost (the call fails after the
    /// timeout).
    pub(super) fn round_trip(env: &mut Env, p: usize) -> Option<Nanos> {
        env.cost.messages += 2;
        if env.store_down || env.net.lost() {
            env.cost.failed += 1;
            return None;
        }
        Some(env.net.rtt_for(p))
    }

    /// The loop waits (`fan.Wait()`) until `until`.
    pub(super) fn wait(&mut self, id: LoopId, t: Nanos, until: Nanos) {
        if until > t {
            let lp = self.lp(id);
            lp.busy = true;
            let era = lp.era;
            self.schedule(until, Ev::Free(id, era));
        }
    }

    /// `sendHits` (global.go:155-199).
    pub(super) fn send_hits(&mut self, p: usize, t: Nanos, env: &mut Env) -> Result<()> {
        let id = (p, LoopKind::Hits);
        let lp = self.lp(id);
        lp.at_key.clear();
        let hits = std::mem::take(&mut lp.agg);
        // One request per owner, in the order of their first keys.
        let mut per_owner: Vec<(usize, Vec<Msg>)> = Vec::new();
        for m in hits {
            let o = self.owner_of(m.key);
            match per_owner.iter_mut().find(|(x, _)| *x == o) {
                Some((_, v)) => v.push(m),
                None => per_owner.push((o, vec![m])),
            }
        }
        let mut until = t;
        for (o, reqs) in per_owner {
            match Self::round_trip(env, p) {
                None => until = until.max(t + TIMEOUT),
                Some(rtt) => {
                    self.next_msg += 1;
                    self.msgs.insert(self.next_msg, reqs);
                    self.schedule(t + rtt / 2, Ev::Hits(o, self.next_msg));
                    until = until.max(t + rtt);
                }
            }
        }
        self.wait(id, t, until);
        Ok(())
    }

    /// `broadcastPeers` (global.go:246-299).
    pub(super) fn broadcast(&mut self, o: usize, t: Nanos, env: &mut Env) -> Result<()> {
        let id = (o, LoopKind::Broadcast);
        let lp = self.lp(id);
        lp.at_key.clear();
        let updates = std::mem::take(&mut lp.agg);
        let mut statuses = Vec::with_capacity(updates.len());
        for m in updates {
            let k = m.key;
            // The status read with hits = 0 and the update's CreatedAt.
            self.decide(o, k, 0, t, m.created_ms, false, env);
            if let Some(&it) = self.caches[o].get(&k) {
                statuses.push((k, it));
            }
        }
        let statuses = Arc::new(statuses);
        let mut until = t;
        for p in (0..self.n).filter(|&p| p != o) {
            match Self::round_trip(env, p) {
                None => until = until.max(t + TIMEOUT),
                Some(rtt) => {
                    self.next_msg += 1;
                    self.statuses.insert(self.next_msg, Arc::clone(&statuses));
                    self.schedule(t + rtt / 2, Ev::Update(p, self.next_msg));
                    until = until.max(t + rtt);
                }
            }
        }
        self.wait(id, t, until);
        Ok(())
    }

    /// `sendBatch` (peer_client.go:348-411), in its own goroutine: the
    /// loop does not wait.
    pub(super) fn send_batch(&mut self, p: usize, o: usize, t: Nanos, env: &mut Env) -> Result<()> {
        let reqs = std::mem::take(&mut self.lp((p, LoopKind::Batch(o))).queue);
        match Self::round_trip(env, p) {
            None => {
                for m in reqs {
                    env.cost.added_latency_ns += u128::from(t - m.at + TIMEOUT);
                    self.resolve(m.ticket, false);
                }
            }
            Some(rtt) => {
                for m in &reqs {
                    env.cost.added_latency_ns += u128::from(t - m.at + rtt);
                }
                self.next_msg += 1;
                self.msgs.insert(self.next_msg, reqs);
                self.schedule(t + rtt / 2, Ev::Forward(o, self.next_msg));
            }
        }
        Ok(())
    }

    pub(super) fn resolve(&mut self, ticket: u64, allowed: bool) {
        self.pending = self.pending.saturating_sub(1);
        self.resolved.push((ticket, allowed));
    }

    /// `tokenBucket` on peer `p`'s cache at `t`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn decide(
        &mut self,
        p: usize,
        key: u32,
        hits: i64,
        t: Nanos,
        created_ms: i64,
        drain: bool,
        env: &Env,
    ) -> bool {
        let now_ms = unix_ms(env, t);
        let cache = &mut self.caches[p];
        let mut item = cache.get(&key).copied();
        let ok = token_bucket(
            &mut item,
            now_ms,
            created_ms,
            self.limit,
            self.duration_ms,
            hits,
            drain,
        );
        if let Some(it) = item {
            cache.insert(key, it);
        }
        self.peak[p] = self.peak[p].max(cache.len());
        ok
    }

    /// Handles one event.
    pub(super) fn handle(&mut self, at: Nanos, ev: Ev, env: &mut Env) -> Result<()> {
        match ev {
            Ev::Tick(id, era, seq) => {
                let live = matches!(self.loops.get(&id), Some(lp) if lp.era == era && lp.runner == Runner::Sleeping(at, seq));
                if live {
                    self.sleep_ends(id, at, env)?;
                }
            }
            Ev::Free(id, era) => {
                if matches!(self.loops.get(&id), Some(lp) if lp.era == era) {
                    self.lp(id).busy = false;
                    self.pump(id, at, env)?;
                }
            }
            Ev::Hits(o, b) => {
                let reqs = self.msgs.remove(&b).unwrap_or_default();
                if o < self.n {
                    for m in reqs {
                        let bc = (o, LoopKind::Broadcast);
                        self.maybe_tick_first(bc, at, env)?;
                        self.decide(o, m.key, m.hits, at, m.created_ms, self.drain, env);
                        self.arrive(bc, m, at, env)?;
                    }
                }
            }
            Ev::Update(p, b) => {
                let st = self.statuses.remove(&b).unwrap_or_default();
                if p < self.n {
                    for &(k, it) in st.iter() {
                        self.caches[p].insert(k, it);
                    }
                    self.peak[p] = self.peak[p].max(self.caches[p].len());
                }
            }
            Ev::Forward(o, b) => {
                let reqs = self.msgs.remove(&b).unwrap_or_default();
                for m in reqs {
                    let ok =
                        o < self.n && self.decide(o, m.key, m.hits, at, m.created_ms, false, env);
                    self.resolve(m.ticket, ok);
                }
            }
        }
        Ok(())
    }

    /// Drops peer `p`'s loops (a restart or a scale-down): requests queued
    /// in its peer clients fail.
    pub(super) fn drop_loops(&mut self, keep: impl Fn(&LoopId) -> bool) {
        let mut gone: Vec<LoopId> = self.loops.keys().filter(|id| !keep(id)).copied().collect();
        gone.sort_unstable();
        for id in gone {
            if let Some(lp) = self.loops.remove(&id) {
                for m in lp.queue.iter().chain(lp.chan.iter()) {
                    if matches!(id.1, LoopKind::Batch(_)) {
                        self.resolve(m.ticket, false);
                    }
                }
            }
        }
    }
}
