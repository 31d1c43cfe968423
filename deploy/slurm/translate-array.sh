#!/bin/sh
# One task of a Slurm job array translating a file split into parts
# (docs/deploy.md#a-slurm-array):
#   split -n l/16 -d -a 4 big.en parts/big.en.
#   sbatch --array=0-15 deploy/slurm/translate-array.sh MODEL_DIR parts/big.en parts/big.fr
# Task i translates IN.<i, 4 digits> into OUT.<i, 4 digits> with the task's
# CPUs; once every task is done, `cat parts/big.fr.* > big.fr` joins the
# parts in order. Outside Slurm, SLURM_ARRAY_TASK_ID=i runs task i.
# TED names the ted program (default: ted on the PATH).
#SBATCH --job-name=ted-translate
#SBATCH --cpus-per-task=4
#SBATCH --mem=4G
#SBATCH --time=02:00:00
set -eu
if [ $# -ne 3 ]; then
    echo "usage: translate-array.sh MODEL_DIR IN_PREFIX OUT_PREFIX" >&2
    exit 2
fi
model=$1
part=$(printf '%04d' "${SLURM_ARRAY_TASK_ID:?not a task of a Slurm array}")
in="$2.$part"
out="$3.$part"
# the part is written under another name first: a task that fails or is
# preempted leaves no part that looks whole
"${TED:-ted}" translate -m "$model" --threads "${SLURM_CPUS_PER_TASK:-1}" -i "$in" -o "$out.partial"
mv "$out.partial" "$out"
