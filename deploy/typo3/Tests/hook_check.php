<?php

/*
 * Checks DataHandlerHook against the calls TYPO3 13's DataHandler makes, without TYPO3:
 * the classes the hook uses are stand-ins that record what is sent. A save runs the
 * hooks in TYPO3's order: processDatamap_afterAllOperations (or processCmdmap_afterFinish),
 * then the cache clears of the page TSconfig (TCEMAIN.clearCacheCmd), each a
 * clearCachePostProc with the DataHandler; then the request ends.
 *
 * Run: php deploy/typo3/Tests/hook_check.php (deploy's Go tests do). It prints one line
 * a case and exits 1 when one fails.
 */

declare(strict_types=1);

namespace TYPO3\CMS\Core\DataHandling {
    class DataHandler
    {
        public $datamap = [];
        public $cmdmap = [];
        public $substNEWwithIDs = [];
        public $copyMappingArray_merged = [];
        public $BE_USER;
    }
}

namespace TYPO3\CMS\Core\Utility {
    class MathUtility
    {
        public static function canBeInterpretedAsInteger($var): bool
        {
            return $var !== '' && (string)(int)$var === (string)$var;
        }
    }
}

namespace Sitetools\Typo3Reindex\Page {
    /** Pages 10 and 20 are public; 99 is a folder (no URL). */
    class PageUrls
    {
        /** @var array<string, int> the page a record of another table is stored on */
        public array $pids = [];

        public function forRecord(string $table, int $uid): array
        {
            $pid = $table === 'pages' ? $uid : ($this->pids[$table . ':' . $uid] ?? 0);
            return $pid > 0 ? $this->forPage($pid) : [];
        }

        public function forPage(int $pageUid, int $languageId = -1): array
        {
            return in_array($pageUid, [10, 20], true) ? ['https://www.example.com/page-' . $pageUid] : [];
        }
    }
}

namespace Sitetools\Typo3Reindex\Client {
    class ReindexClient
    {
        /** @var list<string> "all", or the URLs of a request joined by spaces */
        public array $sent = [];

        public function reindexUrls(array $urls): void
        {
            $this->sent[] = implode(' ', $urls);
        }

        public function reindexAll(): void
        {
            $this->sent[] = 'all';
        }
    }
}

namespace Sitetools\Typo3Reindex\Configuration {
    class ReindexConfiguration
    {
        public function __construct(public readonly bool $reindexOnFlush = true)
        {
        }

        public function isComplete(): bool
        {
            return true;
        }
    }
}

namespace {
    use Sitetools\Typo3Reindex\Client\ReindexClient;
    use Sitetools\Typo3Reindex\Configuration\ReindexConfiguration;
    use Sitetools\Typo3Reindex\Hook\DataHandlerHook;
    use Sitetools\Typo3Reindex\Page\PageUrls;
    use TYPO3\CMS\Core\DataHandling\DataHandler;

    require __DIR__ . '/../Classes/Hook/DataHandlerHook.php';

    $GLOBALS['TCA']['be_users']['ctrl']['rootLevel'] = 1;

    const PAGE10 = 'https://www.example.com/page-10';
    const PAGE20 = 'https://www.example.com/page-20';

    /**
     * run plays one DataHandler run: its hooks, then each cache command of its page
     * TSconfig, then the end of the request; it returns what was sent.
     *
     * @param array<string, array> $datamap
     * @param array<string, int> $pids where records of other tables are stored
     * @param list<string> $cacheCmds
     * @return list<string>
     */
    function run(array $datamap, array $cmdmap, array $pids, array $cacheCmds, bool $reindexOnFlush = true, int $workspace = 0): array
    {
        $pageUrls = new PageUrls();
        $pageUrls->pids = $pids;
        $client = new ReindexClient();
        $hook = new DataHandlerHook($pageUrls, $client, new ReindexConfiguration($reindexOnFlush));
        $dh = new DataHandler();
        $dh->datamap = $datamap;
        $dh->cmdmap = $cmdmap;
        $dh->BE_USER = (object)['workspace' => $workspace];
        if ($datamap !== []) {
            $hook->processDatamap_afterAllOperations($dh);
        }
        if ($cmdmap !== []) {
            $hook->processCmdmap_afterFinish($dh);
        }
        foreach ($cacheCmds as $command) {
            $hook->clearCachePostProc(['cacheCmd' => $command, 'tags' => []], $dh);
        }
        $hook->flush(); // what register_shutdown_function runs at the end of the request
        return $client->sent;
    }

    // tt_content 5 is on page 10; a record's pid for other tables comes from $pids.
    $cases = [
        'content saved, clearCacheCmd = pages: its page, no full re-crawl' => [
            run(['tt_content' => [5 => []]], [], ['tt_content:5' => 10], ['pages']),
            [PAGE10],
        ],
        'content and its image saved, clearCacheCmd = all: its page, once' => [
            run(['tt_content' => [5 => []], 'sys_file_reference' => [7 => []]], [], ['tt_content:5' => 10, 'sys_file_reference:7' => 10], ['all']),
            [PAGE10],
        ],
        'page saved, clearCacheCmd = pages, 20: the page and page 20' => [
            run(['pages' => [10 => []]], [], [], ['pages', '20']),
            [PAGE10, PAGE20],
        ],
        'plugin record on page 20, clearCacheCmd = pages: page 20' => [
            run(['tx_shop_product' => [3 => []]], [], ['tx_shop_product:3' => 20], ['pages']),
            [PAGE20],
        ],
        'new record whose save failed, clearCacheCmd = pages: nothing' => [
            run(['tx_shop_product' => ['NEW1' => []]], [], [], ['pages']),
            [],
        ],
        'news record in a folder, clearCacheCmd = pages: the whole site' => [
            run(['tx_news_domain_model_news' => [4 => []]], [], ['tx_news_domain_model_news:4' => 99], ['pages']),
            ['all'],
        ],
        'backend user saved, clearCacheCmd = pages: nothing' => [
            run(['be_users' => [2 => []]], [], [], ['pages']),
            [],
        ],
        'news record in a folder, reindexOnFlush off: nothing' => [
            run(['tx_news_domain_model_news' => [4 => []]], [], ['tx_news_domain_model_news:4' => 99], ['pages'], false),
            [],
        ],
        'news record saved in a workspace: nothing' => [
            run(['tx_news_domain_model_news' => [4 => []]], [], ['tx_news_domain_model_news:4' => 99], ['pages'], true, 1),
            [],
        ],
        'news record published from a workspace: the whole site' => [
            run([], ['tx_news_domain_model_news' => [4 => ['version' => ['action' => 'publish']]]], ['tx_news_domain_model_news:4' => 99], ['pages'], true, 1),
            ['all'],
        ],
        'content deleted, clearCacheCmd = pages: its page' => [
            run([], ['tt_content' => [5 => ['delete' => 1]]], ['tt_content:5' => 10], ['pages']),
            [PAGE10],
        ],
        '"Flush frontend caches": the whole site' => [
            run([], [], [], ['pages']),
            ['all'],
        ],
        '"Flush frontend caches", reindexOnFlush off: nothing' => [
            run([], [], [], ['pages'], false),
            [],
        ],
        '"Clear cache" of page 10: page 10' => [
            run([], [], [], ['10']),
            [PAGE10],
        ],
    ];
    // A new record: its uid is the DataHandler's once saved (substNEWwithIDs).
    $pageUrls = new PageUrls();
    $pageUrls->pids = ['tx_shop_product:3' => 20];
    $client = new ReindexClient();
    $hook = new DataHandlerHook($pageUrls, $client, new ReindexConfiguration(true));
    $dh = new DataHandler();
    $dh->datamap = ['tx_shop_product' => ['NEW1' => []]];
    $dh->substNEWwithIDs = ['NEW1' => 3];
    $dh->BE_USER = (object)['workspace' => 0];
    $hook->processDatamap_afterAllOperations($dh);
    $hook->clearCachePostProc(['cacheCmd' => 'pages', 'tags' => []], $dh);
    $hook->flush();
    $cases['new plugin record on page 20, clearCacheCmd = pages: page 20'] = [$client->sent, [PAGE20]];

    $failed = 0;
    foreach ($cases as $name => [$got, $want]) {
        // Every URL (or "all") once, in whichever request: one sent twice fails.
        $flat = $got === [] ? [] : explode(' ', implode(' ', $got));
        sort($flat);
        sort($want);
        $ok = $flat === $want;
        printf("%s %s: sent %s\n", $ok ? 'ok  ' : 'FAIL', $name, $got === [] ? 'nothing' : json_encode($got));
        $failed += $ok ? 0 : 1;
    }
    exit($failed > 0 ? 1 : 0);
}
