<?php

declare(strict_types=1);

namespace Sitetools\Typo3Reindex\Hook;

use Sitetools\Typo3Reindex\Client\ReindexClient;
use Sitetools\Typo3Reindex\Configuration\ReindexConfiguration;
use Sitetools\Typo3Reindex\Page\PageUrls;
use TYPO3\CMS\Core\DataHandling\DataHandler;
use TYPO3\CMS\Core\Utility\MathUtility;

/**
 * Tells sitetools which pages an editor changed.
 *
 * The DataHandler calls it when records are saved (datamap), moved, deleted, copied,
 * translated or published from a workspace (cmdmap), and when a page's cache or every
 * page's cache is cleared. It collects the frontend URLs of the pages concerned — for
 * a moved, hidden or deleted page its URL from before as well, so that sitetools finds
 * it gone — and sends them in one request at the end of the DataHandler's run.
 *
 * Nothing here can break a save: sitetools away, slow or refusing costs a log line
 * (and at most the configured timeout), and its next sync catches up.
 *
 * One instance per request (a shared service), so that what a cache-clear collects is
 * sent with the save that caused it.
 */
final class DataHandlerHook
{
    private const TABLES = ['pages', 'tt_content'];

    /** @var array<string, true> the URLs to send, as keys */
    private array $urls = [];

    private bool $all = false;

    /** @var array<string, true> the URLs this request has sent, as keys */
    private array $sent = [];

    private bool $shutdownRegistered = false;

    public function __construct(
        private readonly PageUrls $pageUrls,
        private readonly ReindexClient $client,
        private readonly ReindexConfiguration $configuration,
    ) {
    }

    /** Before a page is saved: its URL as it is now, in case the save moves or hides it. */
    public function processDatamap_preProcessFieldArray(array &$fieldArray, $table, $id, DataHandler $dataHandler): void
    {
        if ($table === 'pages' && MathUtility::canBeInterpretedAsInteger($id) && $this->isLive($dataHandler)) {
            $this->collectRecord('pages', (int)$id);
        }
    }

    /** Before a record is moved or deleted: the URL of the page it is on now. */
    public function processCmdmap_preProcess($command, $table, $id, $value, DataHandler $dataHandler): void
    {
        if (in_array($table, self::TABLES, true) && in_array($command, ['move', 'delete'], true)
            && MathUtility::canBeInterpretedAsInteger($id) && $this->isLive($dataHandler)) {
            $this->collectRecord((string)$table, (int)$id);
        }
    }

    /** After every record of a save is written: the pages they are on, then send. */
    public function processDatamap_afterAllOperations(DataHandler $dataHandler): void
    {
        if ($this->isLive($dataHandler)) {
            foreach (self::TABLES as $table) {
                foreach (array_keys($dataHandler->datamap[$table] ?? []) as $id) {
                    $uid = MathUtility::canBeInterpretedAsInteger($id) ? (int)$id : (int)($dataHandler->substNEWwithIDs[$id] ?? 0);
                    if ($uid > 0) {
                        $this->collectRecord($table, $uid);
                    }
                }
            }
        }
        $this->flush();
    }

    /** After every command: the pages the records are on now (and copies' pages), then send. */
    public function processCmdmap_afterFinish(DataHandler $dataHandler): void
    {
        foreach (self::TABLES as $table) {
            foreach ($dataHandler->cmdmap[$table] ?? [] as $id => $commands) {
                if (!MathUtility::canBeInterpretedAsInteger($id) || !is_array($commands)) {
                    continue;
                }
                foreach (array_keys($commands) as $command) {
                    // Publishing a workspace makes its changes live; anything else done in
                    // a workspace is not seen by visitors yet.
                    if ($command !== 'version' && !$this->isLive($dataHandler)) {
                        continue;
                    }
                    $this->collectRecord($table, (int)$id);
                    $copy = (int)($dataHandler->copyMappingArray_merged[$table][(int)$id] ?? 0);
                    if ($copy > 0) {
                        $this->collectRecord($table, $copy);
                    }
                }
            }
        }
        $this->flush();
    }

    /**
     * After a cache was cleared. A page's cache (the page module's "Clear cache", or
     * TCEMAIN.clearCacheCmd = <page uid> of a save): that page in every language. Every
     * page's cache ("Flush frontend caches", "Flush all caches"): the whole site, if
     * reindexOnFlush. Every page's cache cleared by a save (TCEMAIN.clearCacheCmd = pages
     * or all): see clearedBySave. A record's own cache entries are the save's, which the
     * hooks above have.
     *
     * @param array<string, mixed> $params
     */
    public function clearCachePostProc(array $params, ?object $dataHandler = null): void
    {
        if (!isset($params['cacheCmd']) || !$this->configuration->isComplete()) {
            return;
        }
        $command = strtolower((string)$params['cacheCmd']);
        if (MathUtility::canBeInterpretedAsInteger($command)) {
            try {
                foreach ($this->pageUrls->forPage((int)$command) as $url) {
                    $this->urls[$url] = true;
                }
            } catch (\Throwable) {
                return;
            }
        } elseif (!in_array($command, ['pages', 'all'], true)) {
            return;
        } elseif ($dataHandler instanceof DataHandler && $this->isSave($dataHandler)) {
            if (!$this->clearedBySave($dataHandler)) {
                return;
            }
        } elseif ($this->configuration->reindexOnFlush) {
            $this->all = true;
        } else {
            return;
        }
        // A cache cleared on its own has no DataHandler run to end: send when the request does.
        if (!$this->shutdownRegistered) {
            $this->shutdownRegistered = true;
            register_shutdown_function($this->flush(...));
        }
    }

    /** flush sends what was collected, and forgets it. */
    public function flush(): void
    {
        $urls = array_keys($this->urls);
        $all = $this->all;
        $this->urls = [];
        $this->all = false;
        if (!$this->configuration->isComplete()) {
            return;
        }
        try {
            if ($all) {
                $this->client->reindexAll();
            } elseif ($urls !== []) {
                $this->client->reindexUrls(array_map('strval', $urls));
                $this->sent += array_fill_keys($urls, true);
            }
        } catch (\Throwable) {
            // The client logs and returns its failures; nothing may reach the editor.
        }
    }

    private function collectRecord(string $table, int $uid): void
    {
        if (!$this->configuration->isComplete()) {
            return;
        }
        try {
            foreach ($this->pageUrls->forRecord($table, $uid) as $url) {
                $this->urls[$url] = true;
            }
        } catch (\Throwable) {
            // A page without a site, a broken route enhancer: no URL to send.
        }
    }

    /** Whether the DataHandler run saved or changed records: a cache clear in it is the save's. */
    private function isSave(DataHandler $dataHandler): bool
    {
        return $dataHandler->datamap !== [] || $dataHandler->cmdmap !== [];
    }

    /**
     * Every page's cache cleared by a save, TCEMAIN.clearCacheCmd = pages (or all) in the
     * page TSconfig of the records saved: TYPO3 runs it once the save's records are written,
     * and says no more than "every page". What a visitor sees changed only where those
     * records are shown, so the hook sends their pages, not the whole site: the pages and
     * content elements are sent already (processDatamap_afterAllOperations,
     * processCmdmap_afterFinish); a record of another table is sent with the page it is
     * stored on (an image's reference, a plugin's record on its page). Only a record
     * stored where no visitor goes (a folder of news or products) is shown on pages that
     * TYPO3 does not name: for it, the whole site, if reindexOnFlush. The sitemap's
     * <lastmod> of its detail page has moved, so sitetools fetches that page, and asks
     * the others whether they changed. A save in a workspace changed nothing a visitor
     * sees, unless it publishes. It reports whether there is something to send.
     */
    private function clearedBySave(DataHandler $dataHandler): bool
    {
        if (!$this->isLive($dataHandler) && !$this->publishes($dataHandler)) {
            return false;
        }
        $found = false;
        foreach ([$dataHandler->datamap, $dataHandler->cmdmap] as $map) {
            foreach ($map as $table => $records) {
                // Records of the root level (users, files, languages) are no page's content.
                if (in_array($table, self::TABLES, true) || !is_array($records)
                    || (int)($GLOBALS['TCA'][$table]['ctrl']['rootLevel'] ?? 0) === 1) {
                    continue;
                }
                foreach (array_keys($records) as $id) {
                    $uid = MathUtility::canBeInterpretedAsInteger($id) ? (int)$id : (int)($dataHandler->substNEWwithIDs[$id] ?? 0);
                    if ($uid <= 0) {
                        continue; // a new record that was not saved
                    }
                    try {
                        $urls = $this->pageUrls->forRecord((string)$table, $uid);
                    } catch (\Throwable) {
                        $urls = [];
                    }
                    if ($urls === []) {
                        if (!$this->configuration->reindexOnFlush) {
                            continue;
                        }
                        $this->all = true;
                        return true;
                    }
                    // An image's page was sent with its content element already.
                    foreach (array_diff($urls, array_keys($this->sent)) as $url) {
                        $this->urls[$url] = true;
                        $found = true;
                    }
                }
            }
        }
        return $found;
    }

    /** Whether the run publishes from a workspace: its changes become live. */
    private function publishes(DataHandler $dataHandler): bool
    {
        foreach ($dataHandler->cmdmap as $records) {
            foreach (is_array($records) ? $records : [] as $commands) {
                if (is_array($commands) && array_key_exists('version', $commands)) {
                    return true;
                }
            }
        }
        return false;
    }

    private function isLive(DataHandler $dataHandler): bool
    {
        return (int)($dataHandler->BE_USER?->workspace ?? 0) === 0;
    }
}
