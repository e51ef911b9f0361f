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
     * TCEMAIN.clearCacheCmd of a save): that page in every language. Every page's cache
     * ("Flush frontend caches", "Flush all caches"): the whole site, if reindexOnFlush.
     * A record's own cache entries are the save's, which the hooks above have.
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
        } elseif (in_array($command, ['pages', 'all'], true) && $this->configuration->reindexOnFlush) {
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

    private function isLive(DataHandler $dataHandler): bool
    {
        return (int)($dataHandler->BE_USER?->workspace ?? 0) === 0;
    }
}
