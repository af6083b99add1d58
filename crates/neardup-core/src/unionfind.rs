//! Union-find (disjoint sets) with path halving and union by size, and connected
//! components labelled by their smallest member, so labels never depend on pair order.

#[derive(Debug, Clone)]
pub struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    pub fn new(n: usize) -> Self {
        assert!(n <= u32::MAX as usize, "union-find holds at most 2^32 - 1 nodes");
        UnionFind { parent: (0..n as u32).collect(), size: vec![1; n] }
    }

    /// As `new`, but a failed allocation is an error, not an abort (the Python binding's
    /// `UnionFind(n)` raises MemoryError instead of ending the interpreter).
    pub fn try_new(n: usize) -> Result<Self, std::collections::TryReserveError> {
        let mut uf = UnionFind { parent: Vec::new(), size: Vec::new() };
        uf.try_grow(n)?;
        Ok(uf)
    }

    /// As `grow`, but a failed allocation is an error, not an abort.
    pub fn try_grow(&mut self, n: usize) -> Result<(), std::collections::TryReserveError> {
        assert!(n <= u32::MAX as usize, "union-find holds at most 2^32 - 1 nodes");
        let more = n.saturating_sub(self.parent.len());
        self.parent.try_reserve_exact(more)?;
        self.size.try_reserve_exact(more)?;
        self.grow(n);
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.parent.len()
    }

    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// Grow to `n` nodes (new nodes are singletons); used by incremental indexes.
    pub fn grow(&mut self, n: usize) {
        let old = self.parent.len();
        if n > old {
            self.parent.extend(old as u32..n as u32);
            self.size.resize(n, 1);
        }
    }

    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let p = self.parent[x as usize];
            self.parent[x as usize] = self.parent[p as usize];
            x = p;
        }
        x
    }

    /// Merge the sets of a and b; true when they were apart.
    pub fn union(&mut self, a: u32, b: u32) -> bool {
        let (mut ra, mut rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        if self.size[ra as usize] < self.size[rb as usize] {
            std::mem::swap(&mut ra, &mut rb);
        }
        self.parent[rb as usize] = ra;
        self.size[ra as usize] += self.size[rb as usize];
        true
    }

    /// Label of every node: the smallest node index in its set.
    pub fn labels(&mut self) -> Vec<u32> {
        self.try_labels().expect("memory for the labels")
    }

    /// As `labels`, but a refused allocation is an error, not an abort.
    pub fn try_labels(&mut self) -> Result<Vec<u32>, std::collections::TryReserveError> {
        let n = self.parent.len();
        let mut smallest: Vec<u32> = Vec::new();
        smallest.try_reserve_exact(n)?;
        smallest.resize(n, u32::MAX);
        let mut out: Vec<u32> = Vec::new();
        out.try_reserve_exact(n)?;
        for x in 0..n as u32 {
            let r = self.find(x) as usize;
            if smallest[r] == u32::MAX {
                smallest[r] = x; // x ascends, so the first seen is the smallest
            }
        }
        out.extend((0..n as u32).map(|x| smallest[self.find(x) as usize]));
        Ok(out)
    }
}

/// Connected components of `n` nodes under `pairs`; errors name the first bad pair.
pub fn connected_components(n: usize, pairs: &[(u32, u32)]) -> crate::Result<Vec<u32>> {
    if n > u32::MAX as usize {
        return crate::error::param(format!("n must be below 2^32, got {n}"));
    }
    // (fallible: a size the allocator refuses is an error, not an abort of the process)
    let no_memory = |_| crate::Error::OutOfMemory(format!("no memory for the components of {n} nodes (16 bytes each)"));
    let mut uf = UnionFind::try_new(n).map_err(no_memory)?;
    for (i, &(a, b)) in pairs.iter().enumerate() {
        if a as usize >= n || b as usize >= n {
            return Err(crate::Error::InvalidInput {
                index: Some(i),
                message: format!("pair {i} = ({a}, {b}) names a node outside 0..{n}"),
            });
        }
        uf.union(a, b);
    }
    uf.try_labels().map_err(no_memory)
}

/// Which of `pairs`, taken in order, join two components (true) rather than fall inside one:
/// the edges of a spanning forest of the graph, the first `fixed` pairs unioned first and
/// always reported false (links known to hold, e.g. exact copies: the forest is of the rest).
/// The index stores these edges of a batch so that its stored pairs keep the components when
/// it keeps only a budget of each document's pairs.
pub fn spanning_forest(n: usize, pairs: &[(u32, u32)], fixed: usize) -> crate::Result<Vec<bool>> {
    let mut uf = UnionFind::new(n);
    let mut out = vec![false; pairs.len()];
    for (i, &(a, b)) in pairs.iter().enumerate() {
        if a as usize >= n || b as usize >= n {
            return Err(crate::Error::InvalidInput {
                index: Some(i),
                message: format!("pair {i} = ({a}, {b}) names a node outside 0..{n}"),
            });
        }
        let joined = uf.union(a, b);
        out[i] = joined && i >= fixed;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_of_too_many_nodes_are_errors() {
        // (n = 2^32 - 1 asked for 64 GiB at once: refused by a small address space, it
        // aborted; here only the range is tested, the allocation failure needs a limit)
        assert!(matches!(connected_components(1 << 32, &[]), Err(crate::Error::InvalidParameter(_))));
        assert_eq!(connected_components(4, &[(3, 1)]).unwrap(), vec![0, 1, 2, 1]);
        let mut uf = UnionFind::new(3);
        uf.union(2, 0);
        assert_eq!(uf.try_labels().unwrap(), uf.labels());
    }

    #[test]
    fn forest() {
        // 0-1, 1-2, 0-2 (a cycle: the third is not needed), 3-4; the fixed 1-2 first
        let got = spanning_forest(5, &[(1, 2), (0, 1), (1, 2), (0, 2), (3, 4)], 1).unwrap();
        assert_eq!(got, [false, true, false, false, true]);
        assert!(spanning_forest(2, &[(0, 2)], 0).is_err());
    }

    #[test]
    fn components() {
        let labels = connected_components(6, &[(4, 2), (2, 5), (1, 0)]).unwrap();
        assert_eq!(labels, [0, 0, 2, 3, 2, 2]);
        assert!(connected_components(2, &[(0, 2)]).is_err());
    }

    #[test]
    fn try_new_and_try_grow_as_new_and_grow() {
        let mut uf = UnionFind::try_new(3).unwrap();
        uf.union(0, 2);
        uf.try_grow(5).unwrap();
        uf.try_grow(2).unwrap(); // never shrinks
        assert_eq!(uf.labels(), [0, 1, 0, 3, 4]);
    }

    #[test]
    fn grow_keeps_sets() {
        let mut uf = UnionFind::new(2);
        uf.union(0, 1);
        uf.grow(4);
        uf.union(3, 1);
        assert_eq!(uf.labels(), [0, 0, 2, 0]);
    }
}
