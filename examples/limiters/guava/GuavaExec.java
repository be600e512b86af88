// A ratelab exec adapter (docs/book/src/protocol.md) around the real Guava
// RateLimiter: one RateLimiter.create(permitsPerSecond) per key, each
// request decided by tryAcquire(w) at its virtual time.
//
// Guava reads time through RateLimiter.SleepingStopwatch, which is
// package-private, and so is the factory RateLimiter.create(double,
// SleepingStopwatch) that takes one (Guava's own RateLimiterTest uses it
// with a fake stopwatch). This class is therefore compiled into Guava's
// package, from a source file of our own, and run with guava.jar on the
// same class path (one class loader, so package-private access holds):
//
//   javac -cp /usr/share/java/guava.jar -d /tmp/guava-exec examples/limiters/guava/GuavaExec.java
//   java -cp /tmp/guava-exec:/usr/share/java/guava.jar com.google.common.util.concurrent.GuavaExec
//
// Policy: permits_per_s = limit / (interval_ms / 1000.0), as the decision
// lab's guava_smooth_bursty model; the entry's params may set
// permits_per_s. Each key's limiter is created at the key's first request,
// and its stopwatch reads the virtual time elapsed since then, truncated to
// microseconds (what Stopwatch.elapsed(MICROSECONDS) gives).
package com.google.common.util.concurrent;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Map;

public final class GuavaExec {
  private static final String PROTOCOL = "ratelab-exec 1";

  /** The virtual clock every key's stopwatch reads. */
  private static long nowNs;

  /** A stopwatch started at a key's first request, on the virtual clock. */
  private static final class VirtualStopwatch extends RateLimiter.SleepingStopwatch {
    private final long startNs;

    VirtualStopwatch(long startNs) {
      this.startNs = startNs;
    }

    @Override
    protected long readMicros() {
      return (nowNs - startNs) / 1000;
    }

    @Override
    protected void sleepMicrosUninterruptibly(long micros) {
      // tryAcquire with no timeout "sleeps" 0 us, never more.
      if (micros > 0) throw new IllegalStateException("tryAcquire slept " + micros + " us");
    }
  }

  /** Reads whole numbers and words from one line. */
  private static final class Line {
    final String s;
    int i;

    Line(String s) {
      this.s = s;
    }

    void skip() {
      while (i < s.length() && s.charAt(i) == ' ') i++;
    }

    String word() {
      skip();
      int b = i;
      while (i < s.length() && s.charAt(i) != ' ') i++;
      return s.substring(b, i);
    }

    long num() {
      skip();
      int b = i;
      long v = 0;
      while (i < s.length()) {
        char c = s.charAt(i);
        if (c < '0' || c > '9') break;
        v = v * 10 + (c - '0');
        i++;
      }
      if (i == b) throw new IllegalArgumentException("expected a number at column " + (b + 1));
      return v;
    }
  }

  public static void main(String[] args) throws IOException {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 20);
    BufferedWriter out =
        new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 20);
    String hello = in.readLine();
    if (hello == null || !hello.startsWith(PROTOCOL + " limiter")) {
      System.err.println("not a limiter hello: " + hello);
      System.exit(2);
    }
    Map<String, String> fields = new HashMap<>();
    for (String w : hello.split(" ")) {
      int eq = w.indexOf('=');
      if (eq > 0) fields.put(w.substring(0, eq), w.substring(eq + 1));
    }
    long limit = Long.parseLong(fields.get("limit"));
    long intervalMs = Long.parseLong(fields.get("interval_ms"));
    double pps = limit / (intervalMs / 1000.0);
    if (fields.containsKey("permits_per_s")) pps = Double.parseDouble(fields.get("permits_per_s"));
    // SmoothBursty: storedPermits, maxPermits, stableIntervalMicros,
    // maxBurstSeconds (doubles), nextFreeTicketMicros (long), plus the
    // stopwatch and mutex references: 56 bytes of fields.
    out.write(PROTOCOL + " ok state_bytes=56\n");
    out.flush();
    ArrayList<RateLimiter> lims = new ArrayList<>();
    StringBuilder res = new StringBuilder(1 << 16);
    String line;
    while ((line = in.readLine()) != null) {
      Line p = new Line(line);
      String word = p.word();
      if (word.isEmpty()) continue;
      if (word.equals("end")) break;
      if (!word.equals("batch")) {
        System.err.println("unexpected line starting " + word);
        System.exit(2);
      }
      p.num(); // seq
      long n = p.num();
      res.setLength(0);
      for (long i = 0; i < n; i++) {
        long t = p.num();
        int k = (int) p.num();
        long w = p.num();
        nowNs = t;
        while (lims.size() <= k) lims.add(null);
        RateLimiter l = lims.get(k);
        if (l == null) {
          l = RateLimiter.create(pps, new VirtualStopwatch(t));
          lims.set(k, l);
        }
        if (i > 0) res.append(' ');
        res.append(l.tryAcquire(Math.toIntExact(w)) ? '1' : '0');
      }
      res.append('\n');
      out.write(res.toString());
      out.flush();
    }
    out.flush();
  }
}
