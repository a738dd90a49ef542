#!/usr/bin/env bash
# Debian packages the test suite measures against (run as root; skipped when already present):
#   fluidsynth + fluid-soundfont-gm  independent MIDI renderer (MTS tuning, speed comparison)
#   jackd2                           JACK server with the dummy backend, for live-MIDI tests, and its
#                                    jack_midi_dump, the independent recorder of tests/test_live_delivery.py
#   chromium + chromium-driver       headless browser for the audio-guide page
#   lilypond                         PDF engraving of the score
#   sox                              independent audio measurements
#   fonts-noto-cjk                   Chinese glyphs for the browser and LilyPond
#   ffmpeg                           makes the phone-video (MP4/AAC) recordings the drum finder is tested on
#   default-jre-headless + npm       the Nu Html Checker (vnu-jar from the npm registry) for the guide's HTML
#   tmux                             a terminal emulator the operator's screen of play is read through
#   espeak-ng                        a reference speaker (GPL: the tests run it, the package never does):
#                                    its Mandarin templates for the voices' intelligibility (test_speech.py)
#   hydrogen-drumkits                recorded drums (wav/flac one-shots; test data only) for the drum
#                                    finder's family of mixes (tests/drum_family.py)
set -eu
pkgs="fluidsynth fluid-soundfont-gm jackd2 chromium chromium-driver lilypond sox fonts-noto-cjk ffmpeg tmux espeak-ng hydrogen-drumkits"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# the machine image ships a Java runtime and Node.js with npm; Debian's are taken only when absent
command -v java >/dev/null || missing="$missing default-jre-headless"
command -v npm >/dev/null || missing="$missing nodejs npm"
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "tests/system-deps.sh: missing Debian packages:$missing (run as root to install)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # jackd2 asks about realtime priority; answer no without a prompt
  echo "jackd2 jackd/tweak_rt_limits boolean false" | debconf-set-selections
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# the Nu Html Checker: vnu.jar ships inside the npm package (its optional Java download is not used)
if [ ! -f "$(npm root -g)/vnu-jar/build/dist/vnu.jar" ]; then
  npm install -g --silent --no-fund --no-audit vnu-jar >/dev/null
fi
