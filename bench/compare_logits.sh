#!/usr/bin/env bash
# Compare ggscope's logits and greedy generation with the peer oracle
# (llama.cpp, ../shared/peer/peer) on the shared models and on random-weight
# models of every supported architecture made by bench_mkmodel (real
# vocabularies, stand-ins where ../shared has none), for a
# 64-token prompt: relative RMS error of the logits at every position
# (< 1e-3 for F32/F16, < 1e-2 quantized) and greedy generation of 64 tokens
# (identical, or identical up to the first step where the peer's two best
# logits are closer than the measured logit error).
#
# usage: bench/compare_logits.sh [BUILD_DIR]   (default build); needs python3 and the peer.
# WORK=dir keeps the generated models there (default a temporary folder).
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
shared=$src/../shared
peer=$shared/peer/peer
[[ -x $peer ]] || { echo "no peer at $peer: skipped"; exit 77; }
bin=$build/ggscope mk=$build/bench_mkmodel
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
vocab=$shared/fixtures/vocab
TEXT="Once upon a time, there was a little girl named Lily. She loved to play outside in the sun with her friends. One day, she found a big red ball in the park and wanted to show it to her mom. The"

fail=0
compare() { # MODEL TOL [PEER_MODEL]
  local model=$1 tol=$2 pm=${3:-$1} ids
  local try
  for try in 1 2 3; do  # the peer fails now and then when many run at once
    ids=$("$peer" tokenize "$pm" "$TEXT" 2>/dev/null | python3 -c 'import json,sys; t=json.load(sys.stdin)[:64]; print(",".join(map(str,t)))' 2>/dev/null) && [[ -n $ids ]] && break
  done
  [[ -n $ids ]] || { echo "{\"model\": \"$model\", \"error\": \"peer tokenize failed\"}"; fail=1; return; }
  if ! python3 "$src/bench/compare_logits.py" "$bin" "$peer" "$model" "$ids" 64 "$tol" "$pm"; then
    fail=1
  fi
}

# PARTS="shared dense families" chooses what runs (default all); ARCHS and TYPES narrow the families;
# PARTS=moe: the mixture-of-experts families (not in the default until the engine runs them),
# MOE_ARCHS and MOE_TYPES narrow them
# PARTS=long (or LONG=1): long decodes, bit for bit (below; not in the default)
[[ ${LONG:-0} == 1 ]] && PARTS=long
PARTS=${PARTS:-shared dense families}
M=$shared/models
if [[ $PARTS == *shared* ]]; then
  compare "$M/stories260K.gguf" 1e-3
  compare "$M/llama-2-tiny-random.gguf" 1e-3
  # GGUF v1: llama.cpp no longer reads v1, so the peer evaluates the v3 file with the same weights
  compare "$M/tinyllamas-stories-260k-f32.gguf" 1e-3 "$M/stories260K.gguf"
  # the v2 Q8_0 sibling is malformed (a 172-wide tensor in 32-element blocks): llama.cpp
  # refuses it ("failed to read tensor info") and ggscope must refuse it too, with exit 2
  if "$bin" logits "$M/tinyllamas-stories-260k-q8_0.gguf" 1,2 >/dev/null 2>"$work/err.txt"; then
    echo '{"model": "tinyllamas-stories-260k-q8_0.gguf", "pass": false, "error": "accepted a malformed file"}'; fail=1
  else
    echo "{\"model\": \"tinyllamas-stories-260k-q8_0.gguf\", \"refused\": \"$(head -c 200 "$work/err.txt" | tr -d '"\n')\", \"pass\": true}"
  fi
  # real trained weights, quantized by ggscope's reference quantizers
  for t in q8_0 q4_0; do
    f=$work/stories260K-$t.gguf
    [[ -f $f ]] || "$bin" quantize "$M/stories260K.gguf" "$f" --type $t >/dev/null || { fail=1; continue; }
    compare "$f" 1e-2
  done

fi
vocab_of() {
  case $1 in
    llama|gemma3|mistral3) echo "$vocab/ggml-vocab-llama-spm.gguf" ;;
    qwen2|qwen3) echo "$vocab/ggml-vocab-qwen2.gguf" ;;
    phi3) echo "$vocab/ggml-vocab-phi-3.gguf" ;;
    smollm3) echo "$vocab/ggml-vocab-llama-bpe.gguf" ;;
    olmo2|granite) echo "$vocab/ggml-vocab-gpt-2.gguf" ;;
    qwen3moe) echo "$vocab/ggml-vocab-qwen2.gguf" ;;
    gpt-oss) echo "$vocab/ggml-vocab-gpt-2.gguf" ;;  # bench_mkmodel makes the o200k_harmony stand-in
  esac
}
run_arch() { # ARCH TYPES...   (TAG: in the file names, MK_ARGS: more bench_mkmodel options)
  local arch=$1 t f tol; shift
  for t in "$@"; do
    f=$work/$arch${TAG:-}-$t.gguf
    # shellcheck disable=SC2086
    [[ -f $f ]] || "$mk" "$f" --arch $arch --type $t --vocab "$(vocab_of $arch)" --seed 7 ${MK_ARGS:-} || { fail=1; continue; }
    case $t in f32|f16) tol=1e-3 ;; *) tol=1e-2 ;; esac
    compare "$f" $tol
  done
}
if [[ $PARTS == *dense* ]]; then
  for arch in llama qwen2; do run_arch $arch f32 f16 q8_0 q4_0 q4_K q6_K; done
fi
if [[ $PARTS == *families* ]]; then
  # the dense families of docs/engine.md (stand-in vocabularies where ../shared has none)
  for arch in ${ARCHS:-qwen3 gemma3 phi3 smollm3 olmo2 granite mistral3}; do
    # shellcheck disable=SC2086
    run_arch $arch ${TYPES:-f32 f16 q8_0 q4_K}
  done
fi
if [[ $PARTS == *moe* ]]; then
  # docs/engine.md's mixture-of-experts families (notes: moe.md): 8 experts 2 used (llama: Mixtral
  # style), gpt-oss 32 / 4 (MXFP4 experts when quantized) with a 16-token sliding window that the
  # prompt crosses
  for arch in ${MOE_ARCHS:-llama-moe qwen3moe gpt-oss}; do
    # shellcheck disable=SC2086
    case $arch in
      llama-moe) TAG=-moe MK_ARGS="--experts 8 --experts-used 2" run_arch llama ${MOE_TYPES:-f32 f16 q8_0 q4_K} ;;
      qwen3moe) run_arch qwen3moe ${MOE_TYPES:-f32 f16 q8_0 q4_K} ;;
      gpt-oss) MK_ARGS="--swa 16" run_arch gpt-oss ${MOE_TYPES:-f32 f16 q8_0} ;;
      *) echo "{\"arch\": \"$arch\", \"error\": \"not a MoE family (llama-moe qwen3moe gpt-oss)\"}"; fail=1 ;;
    esac
  done
fi
if [[ $PARTS == *long* ]]; then
  # decode steps past 256 cells, where llama.cpp's CPU attention takes its split-KV form (one
  # chunk of the padded view per thread): a 64-token prompt and 962 greedy tokens (views up to
  # 1280 cells; gpt-oss's 16-token window wraps its 768-cell ring) with the same thread count in
  # both engines, 1, 2 and 3 (LONG_THREADS); the logits of the first 513 and 1025 tokens (whose
  # last rows are decode steps after llama.cpp's 512-token batches) and the generations must be
  # bit-identical (the peer's generation stops at an end-of-generation token: the seeds below
  # make the random models meet one late on 2 threads: ~780-930 tokens in for gpt-oss, never
  # for llama).
  # LONG_MODELS: ARCH:TYPE:SEED words (synthetic 300-token vocabulary, 4096 context)
  ids=$(python3 -c 'print(",".join(["1"] + [str((i * 97 + 7) % 290 + 3) for i in range(1, 64)]))')
  for spec in ${LONG_MODELS:-llama:f16:7 llama:q8_0:7 gpt-oss:f16:8 gpt-oss:q8_0:15}; do
    IFS=: read -r arch t seed <<< "$spec"
    f=$work/long-$arch-$t-${seed:=7}.gguf
    # shellcheck disable=SC2046
    [[ -f $f ]] || "$mk" "$f" --arch "$arch" --type "$t" --ctx 4096 --seed "$seed" \
      $([[ $arch == gpt-oss ]] && echo --swa 16) || { fail=1; continue; }
    case $t in f32|f16) tol=1e-3 ;; *) tol=1e-2 ;; esac
    for th in ${LONG_THREADS:-1 2 3}; do
      python3 "$src/bench/compare_logits.py" "$bin" "$peer" "$f" "$ids" 962 $tol --threads "$th" \
        --logits-at 513,1025 --exact || fail=1
    done
  done
fi
[[ -z ${WORK:-} ]] && rm -rf "$work"
exit $fail
